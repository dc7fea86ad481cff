"""conftest.py — one real lmscored per test session, on a loopback port, with
small limits so the limit errors are cheap to provoke. tiny-llama (a 32,000
token vocabulary) keeps the 10,000-item stream fast under ASan."""

import subprocess

import pytest

from daemon import Daemon, cli_path

MAX_ITEMS = 64
MAX_SEQUENCE_TOKENS = 96


@pytest.fixture(scope="session")
def daemon():
    d = Daemon(flags=["--max-items", str(MAX_ITEMS),
                      "--max-sequence-tokens", str(MAX_SEQUENCE_TOKENS)])
    yield d
    d.stop()


@pytest.fixture(scope="session")
def cli(daemon):
    """Runs `lmscore COMMAND --target <daemon> ARGS...`; returns the CompletedProcess."""
    def run(command, *args, input=None, timeout=600, target=None):
        argv = [cli_path(), command, "--target", target or daemon.target, *map(str, args)]
        return subprocess.run(argv, capture_output=True, text=True, input=input, timeout=timeout)
    return run
