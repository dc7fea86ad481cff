"""test_tls.py — TLS end to end: lmscored with --tls-cert/--tls-key (a
certificate for localhost and 127.0.0.1 signed by a throwaway CA made with
openssl), reached by the CLI (--ca-cert, --authority) and the Python client
(root_certificates), and the HTTP API over HTTPS with the same certificate
(curl); untrusted and plaintext clients are refused."""

import json
import os
import re
import subprocess

import pytest

import lmscore
from daemon import Daemon, build_dir, cli_path, model_path


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


@pytest.mark.parametrize("cert,key,field,says", [
    ("server.pem", "other.key", "tls-key", "is not the private key of the certificate"),
    ("server.key", "server.pem", "tls-cert", "swapped"),
    ("server.pem", "server.pem", "tls-key", "swapped"),
    ("san.ext", "server.key", "tls-cert", "holds no PEM certificate"),
])
def test_tls_misconfiguration_is_named(pki, cert, key, field, says):
    """A key that does not belong to the certificate, swapped files or a file
    that is not PEM: the daemon exits 1 naming the flag and the cause, never
    as if the port were busy."""
    result = subprocess.run(
        [os.path.join(build_dir(), "service", "lmscored"), "--model", model_path("tiny-llama.gguf"),
         "--listen", "127.0.0.1:0", "--tls-cert", str(pki / cert), "--tls-key", str(pki / key)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert says in result.stderr and f"field={field}" in result.stderr, result.stderr
    assert "cannot listen" not in result.stderr, result.stderr


@pytest.fixture(scope="module")
def tls_http_daemon(pki):
    d = Daemon(flags=["--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key"),
                      "--http-listen", "127.0.0.1:0"],
               ready_args=["--ca-cert", str(pki / "ca.pem")])
    yield d
    d.stop()


def test_http_api_over_tls(tls_http_daemon, pki):
    """--http-listen serves HTTPS with the daemon's certificate: curl that
    trusts the CA scores; curl that does not, or plain HTTP, gets nothing."""
    port = re.search(r'msg="HTTP listening"[^\n]*\bport=(\d+)', tls_http_daemon.log_text()).group(1)
    body = '{"query": [1, 450], "items": [[338]], "label_token_ids": [3869]}'

    def curl(url, *args):
        return subprocess.run(["curl", "-sS", "--max-time", "30", "-H",
                               "content-type: application/json", "-d", body, *args, url],
                              capture_output=True, text=True, timeout=60)
    ok = curl(f"https://127.0.0.1:{port}/v1/score", "--cacert", str(pki / "ca.pem"))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["scores"][0][0] > 0
    named = curl(f"https://localhost:{port}/v1/score", "--cacert", str(pki / "ca.pem"))
    assert named.returncode == 0, named.stderr
    untrusted = curl(f"https://127.0.0.1:{port}/v1/score", "--cacert", str(pki / "other.pem"))
    assert untrusted.returncode != 0
    plain = curl(f"http://127.0.0.1:{port}/v1/score")
    assert plain.returncode != 0 or "scores" not in plain.stdout
