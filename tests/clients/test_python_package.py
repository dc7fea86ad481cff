"""The Python client installed the Python way: `pip install ./clients/python`
and a wheel from `python3 -m build` (sdist, then the wheel from the sdist),
each into a fresh venv (--system-site-packages: Debian's grpcio and protobuf
satisfy the declared dependencies; --no-index: no network), then a Score
call against a real lmscored from the installed package.

The build runs on a copy of what it may read (clients/python, protos/ and the
top CMakeLists.txt for the version), so it leaves the source tree clean and
cannot depend on anything else in it."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from daemon import Daemon

SOURCE = os.environ["LMSCORE_SOURCE_DIR"]
CALL = textwrap.dedent("""
    import importlib.metadata, sys
    import lmscore
    with lmscore.Client(sys.argv[1]) as client:
        r = client.score("Is it good?", [" yes", " no"], labels=[5])
    assert len(r.scores) == 2 and 0 < r.scores[0][0] <= 1, r
    print(lmscore.__file__, importlib.metadata.version("lmscore"))
""")


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(lmscore VERSION ([0-9.]+)", f.read()).group(1)


def clean_env():
    """Without the suite's PYTHONPATH (the CMake-built package)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run(*argv, cwd=None):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=cwd,
                            env=clean_env())
    assert result.returncode == 0, f"{argv}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def source_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("src")
    shutil.copytree(os.path.join(SOURCE, "clients", "python"), root / "clients" / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "build", "dist", "*.egg-info"))
    shutil.copytree(os.path.join(SOURCE, "protos"), root / "protos")
    shutil.copy(os.path.join(SOURCE, "CMakeLists.txt"), root)
    return root


@pytest.fixture(scope="module")
def daemon():
    d = Daemon()
    yield d
    d.stop()


def fresh_venv(path):
    run(sys.executable, "-m", "venv", "--system-site-packages", str(path))
    return str(path / "bin" / "python")


def check_installed(python, venv, target):
    out = run(python, "-c", CALL, target, cwd="/")
    module, version = out.split()
    assert module.startswith(str(venv)), f"imported {module}, not the venv's install"
    assert version == project_version()


def test_pip_install_of_the_source_directory(source_copy, daemon, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    run(python, "-m", "pip", "install", "--no-index", "--no-build-isolation",
        str(source_copy / "clients" / "python"))
    check_installed(python, tmp_path / "venv", daemon.target)


def test_wheel_from_python_build(source_copy, daemon, tmp_path):
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist),
        str(source_copy / "clients" / "python"))
    wheels = [p for p in os.listdir(dist) if p.endswith(".whl")]
    assert wheels == [f"lmscore-{project_version()}-py3-none-any.whl"], os.listdir(dist)
    python = fresh_venv(tmp_path / "venv")
    run(python, "-m", "pip", "install", "--no-index", str(dist / wheels[0]))
    check_installed(python, tmp_path / "venv", daemon.target)
