"""conftest.py — one real lmscored per test session, on a loopback port, with
small limits so the limit errors are cheap to provoke. tiny-llama (a 32,000
token vocabulary) keeps the 10,000-item stream fast under ASan. pki: a
throwaway CA (openssl) and a server certificate for localhost and 127.0.0.1
it signed, plus a second CA that signed nothing."""

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


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=lmscore test CA", cwd=d)
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost",
            cwd=d)
    (d / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext", cwd=d)
    # A second CA that signed nothing the server holds.
    openssl("req", "-x509", *ec, "-keyout", "other.key", "-out", "other.pem", "-days", "2",
            "-subj", "/CN=someone else", cwd=d)
    return d
