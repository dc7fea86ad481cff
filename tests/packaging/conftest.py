"""conftest.py — where the packaging tests find things: the source tree, the
build tree (LMSCORE_BUILD_DIR, with the built binaries and models), the pinned
npm tools (LMSCORE_NPM_TOOLS, installed by install_npm_tools.sh) and the
daemon's own list of LMSCORE_* variables."""

import os
import re
import subprocess

import pytest

SOURCE_DIR = os.environ.get(
    "LMSCORE_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _required_env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this suite through ctest (tests/packaging.cmake)")
    return value


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR


@pytest.fixture(scope="session")
def build_dir():
    return _required_env("LMSCORE_BUILD_DIR")


@pytest.fixture(scope="session")
def npm_tools():
    path = _required_env("LMSCORE_NPM_TOOLS")
    if not os.path.isdir(os.path.join(path, "node_modules")):
        pytest.fail(f"{path} holds no npm install: the packaging.npm_tools fixture did not run")
    return path


@pytest.fixture(scope="session")
def daemon_env_names(build_dir):
    """The LMSCORE_* variables lmscored documents in its --help."""
    exe = os.path.join(build_dir, "service", "lmscored")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    names = set(re.findall(r"\bLMSCORE_[A-Z0-9_]+\b", out.stdout + out.stderr))
    assert names, f"lmscored --help names no LMSCORE_* variable:\n{out.stdout}{out.stderr}"
    return names


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()
