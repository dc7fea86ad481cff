"""test_tls.py — TLS end to end: lmscored with --tls-cert/--tls-key (a
certificate for localhost and 127.0.0.1 signed by a throwaway CA made with
openssl), reached by the CLI (--ca-cert, --authority) and the Python client
(root_certificates); untrusted and plaintext clients are refused."""

import subprocess

import pytest

import lmscore
from daemon import Daemon, cli_path


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


@pytest.fixture(scope="module")
def tls_daemon(pki):
    d = Daemon(flags=["--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")],
               ready_args=["--ca-cert", str(pki / "ca.pem")])
    yield d
    d.stop()


def health(target, *args):
    return subprocess.run([cli_path(), "health", "--target", target, "--timeout", "5", *args],
                          capture_output=True, text=True, timeout=60)


def test_cli_trusting_the_ca(tls_daemon, pki):
    result = health(tls_daemon.target, "--ca-cert", str(pki / "ca.pem"))
    assert result.returncode == 0 and result.stdout.strip() == "SERVING", result.stderr


def test_cli_with_an_authority_override(tls_daemon, pki):
    # An IP target verified against the certificate's DNS name (by IP, not
    # "localhost": c-ares' resolver leaks 10 bytes at exit under LeakSanitizer).
    result = health(tls_daemon.target, "--ca-cert", str(pki / "ca.pem"),
                    "--authority", "localhost")
    assert result.returncode == 0, result.stderr
    wrong = health(tls_daemon.target, "--ca-cert", str(pki / "ca.pem"),
                   "--authority", "example.org")
    assert wrong.returncode == 1 and "UNAVAILABLE" in wrong.stderr, wrong.stderr


def test_cli_score_over_tls(tls_daemon, pki):
    result = subprocess.run([cli_path(), "score", "--target", tls_daemon.target, "--ca-cert",
                             str(pki / "ca.pem"), "--query-ids", "1,450", "--item-ids", "338",
                             "--label-id", "3869"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("args", [[], ["--tls"], ["--ca-cert", "other.pem"]])
def test_untrusted_or_plaintext_clients_fail(tls_daemon, pki, args):
    args = [str(pki / a) if a.endswith(".pem") else a for a in args]
    result = health(tls_daemon.target, *args)
    assert result.returncode == 1 and "UNAVAILABLE" in result.stderr, result.stderr


def test_missing_ca_file_is_reported(tls_daemon, pki):
    result = health(tls_daemon.target, "--ca-cert", str(pki / "absent.pem"))
    assert result.returncode == 1 and "absent.pem" in result.stderr, result.stderr


def test_python_client_over_tls(tls_daemon, pki):
    with lmscore.Client(tls_daemon.target, root_certificates=(pki / "ca.pem").read_bytes()) as c:
        assert c.health() == "SERVING"
        assert c.score([1, 450], [[338]], labels=[3869]).scores[0][0] > 0
    with lmscore.Client(tls_daemon.target, root_certificates=(pki / "other.pem").read_bytes(),
                        timeout=5) as c:
        with pytest.raises(lmscore.UnavailableError):
            c.health()
