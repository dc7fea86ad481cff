"""API keys (--api-key-file): every call but the health checks carries
"authorization: Bearer KEY" with one of the file's keys, or ends
UNAUTHENTICATED (HTTP 401) with reason missing_api_key or invalid_api_key,
on gRPC and on the HTTP API alike; reflection follows the keys, /metrics
stays open; the CLI and the Python client send a key from --api-key-file,
api_key= or $LMSCORE_API_KEY; no key ever reaches the log; a bad key file
stops the daemon before it listens.
"""
import json
import os
import socket
import subprocess

import grpc
import pytest

import lmscore
from grpc_reflection.v1 import reflection_pb2, reflection_pb2_grpc
from harness import (BUILD, LMSCORED, MODEL, Daemon, Http, Metrics, error_info, http_error,
                     read_until_close, tokens, value)
from lmscore._pb import health_pb2, health_pb2_grpc
from lmscore.v1 import score_pb2, score_pb2_grpc

KEYS = ["first-key-0123456789", "second.key/with+chars==", "third~key"]
KEY_FILE = f"""# the API keys of this test

  {KEYS[0]}
{KEYS[1]}\r
\t{KEYS[2]}  
"""
CLI = os.path.join(BUILD, "clients", "c", "lmscore")
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED


@pytest.fixture(scope="module")
def key_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "api-keys"
    path.write_text(KEY_FILE)
    return str(path)


@pytest.fixture(scope="module")
def daemon(key_file):
    with Daemon("--api-key-file", key_file, "--metrics-listen", "127.0.0.1:0",
                "--http-listen", "127.0.0.1:0", "--log-level", "debug") as d:
        yield d


def bearer(key):
    return (("authorization", f"Bearer {key}"),)


def score_request():
    return score_pb2.ScoreRequest(query=tokens([1, 2, 3]), items=[tokens([4])],
                                  label_token_ids=[6])


def expect_unauthenticated(fn, reason):
    with pytest.raises(grpc.RpcError) as e:
        fn()
    assert e.value.code() == UNAUTHENTICATED, e.value
    info = error_info(e.value)
    assert info is not None and info.reason == reason and info.domain == "lmscore"
    for key in KEYS:
        assert key not in e.value.details()


def test_score_needs_a_key(daemon):
    with daemon.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        expect_unauthenticated(lambda: stub.Score(score_request(), timeout=60),
                               "missing_api_key")
        for wrong in ["not-a-key", KEYS[0] + "x", KEYS[0][:-1], "", KEYS[1].upper()]:
            expect_unauthenticated(
                lambda: stub.Score(score_request(), timeout=60, metadata=bearer(wrong)),
                "invalid_api_key")
        # another scheme, or the key without one
        for header in [f"Basic {KEYS[0]}", KEYS[0]]:
            expect_unauthenticated(
                lambda: stub.Score(score_request(), timeout=60,
                                   metadata=(("authorization", header),)),
                "invalid_api_key")
        # every key of the file, the scheme in any case
        for key in KEYS:
            assert len(stub.Score(score_request(), timeout=60, metadata=bearer(key)).items) == 1
        md = (("authorization", f"bEaReR {KEYS[2]}"),)
        assert stub.Tokenize(score_pb2.TokenizeRequest(text="hi"), timeout=60, metadata=md)
        # the streams and the other methods too
        expect_unauthenticated(lambda: list(stub.ScoreStream(score_request(), timeout=60)),
                               "missing_api_key")
        header = score_pb2.ScoreItemsRequest(header=score_pb2.ScoreItemsHeader(
            query=tokens([1]), label_token_ids=[6]))
        expect_unauthenticated(lambda: list(stub.ScoreItems(iter([header]), timeout=60)),
                               "missing_api_key")
        expect_unauthenticated(
            lambda: stub.GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=60),
            "missing_api_key")
        # an unknown method says nothing more to a caller without a key
        raw = ch.unary_unary("/lmscore.v1.ScoreService/NoSuchMethod")
        expect_unauthenticated(lambda: raw(b"", timeout=60), "missing_api_key")
        with pytest.raises(grpc.RpcError) as e:
            raw(b"", timeout=60, metadata=bearer(KEYS[0]))
        assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_http_needs_a_key(daemon):
    api = Http(daemon)
    body = {"query": [1, 2, 3], "items": [[4]], "label_token_ids": [6]}

    def refused(reason, headers=None, path="/v1/score"):
        status, got_headers, got = api.post(path, body, headers=headers)
        assert status == 401 and http_error(got) == (reason, None), got
        assert got["error"]["status"] == "UNAUTHENTICATED"
        assert got_headers["WWW-Authenticate"] == "Bearer"
    refused("missing_api_key")
    refused("missing_api_key", path="/v1/rerank")
    for wrong in ["not-a-key", KEYS[0] + "x", f"Basic {KEYS[0]}", KEYS[0]]:
        header = wrong if " " in wrong or wrong == KEYS[0] else f"Bearer {wrong}"
        refused("invalid_api_key", {"Authorization": header})
    for key in KEYS:
        status, _, got = api.score(body, headers={"authorization": f"bearer {key}"})
        assert status == 200 and len(got["scores"]) == 1, got
    status, _, got = api.rerank({"query": "q", "documents": ["d"]},
                                headers={"Authorization": f"Bearer {KEYS[1]}"})
    assert status == 200, got
    for path in ("/v2/rerank", "/rerank"):
        refused("missing_api_key", path=path)
    # health and the spec are open; the model list says what is served
    for path in ("/health", "/openapi.json"):
        assert api.post(path, b"", method="GET")[0] == 200, path
    status, _, got = api.post("/v1/models", b"", method="GET")
    assert status == 401 and http_error(got) == ("missing_api_key", None), got
    status, _, got = api.post("/v1/models", b"", method="GET",
                              headers={"Authorization": f"Bearer {KEYS[0]}"})
    assert status == 200 and got["data"][0]["id"] == "tiny-qwen3", got
    # nothing is said about what is served without a key
    refused("missing_api_key", path="/v1/nothing")
    status, _, got = api.post("/v1/nothing", body, headers={"Authorization": f"Bearer {KEYS[0]}"})
    assert status == 404
    # the key is checked before the body is looked at
    s = socket.create_connection(("127.0.0.1", api.port), timeout=60)
    s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n")
    assert s.recv(64).startswith(b"HTTP/1.1 401")
    s.close()


def test_health_is_open(daemon):
    with daemon.channel() as ch:
        health = health_pb2_grpc.HealthStub(ch)
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=60).status == \
            health_pb2.HealthCheckResponse.SERVING
        watch = health.Watch(health_pb2.HealthCheckRequest(), timeout=60)
        assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
        watch.cancel()


def test_reflection_follows_the_keys(daemon):
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    with daemon.channel() as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        expect_unauthenticated(lambda: list(stub.ServerReflectionInfo(iter([request]),
                                                                      timeout=60)),
                               "missing_api_key")
        (resp,) = stub.ServerReflectionInfo(iter([request]), timeout=60, metadata=bearer(KEYS[1]))
        assert "lmscore.v1.ScoreService" in {s.name for s in
                                              resp.list_services_response.service}


def test_metrics_are_open_and_count_the_refusals(daemon):
    with daemon.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        expect_unauthenticated(lambda: stub.Score(score_request(), timeout=60),
                               "missing_api_key")
    scrape = Metrics(daemon).scrape()  # no key
    assert value(scrape, "lmscore_errors_total", reason="missing_api_key",
                 code="UNAUTHENTICATED") >= 1
    assert value(scrape, "lmscore_errors_total", reason="invalid_api_key",
                 code="UNAUTHENTICATED") >= 1


def test_clients_send_the_key(daemon, key_file, tmp_path):
    def cli(*args, env=None):
        full = {k: v for k, v in os.environ.items() if k != "LMSCORE_API_KEY"}
        full.update(env or {})
        return subprocess.run([CLI, "tokenize", "--target", daemon.target, *args, "hello"],
                              capture_output=True, text=True, timeout=120, env=full)
    r = cli()
    assert r.returncode == 1 and "reason: missing_api_key" in r.stderr, r.stderr
    r = cli("--api-key-file", key_file)  # the file's first key
    assert r.returncode == 0 and r.stdout.split(), r.stderr
    r = cli(env={"LMSCORE_API_KEY": KEYS[2]})
    assert r.returncode == 0, r.stderr
    r = cli(env={"LMSCORE_API_KEY": "wrong"})
    assert r.returncode == 1 and "reason: invalid_api_key" in r.stderr, r.stderr
    wrong_file = tmp_path / "wrong"
    wrong_file.write_text("# only a comment\n\n")
    r = cli("--api-key-file", str(wrong_file))
    assert r.returncode == 1 and "holds no API key" in r.stderr, r.stderr

    saved = os.environ.pop("LMSCORE_API_KEY", None)
    try:
        with lmscore.Client(daemon.target) as c:
            with pytest.raises(lmscore.UnauthenticatedError) as e:
                c.tokenize("hello")
            assert e.value.reason == "missing_api_key"
        with lmscore.Client(daemon.target, api_key=KEYS[1]) as c:
            assert c.tokenize("hello")
            assert c.score([1, 2], [[3]], labels=[4]).scores
            assert len(list(c.score_stream([1, 2], [[3], [4]], labels=[4]))) == 2
            assert c.health() == "SERVING"
        os.environ["LMSCORE_API_KEY"] = KEYS[0]
        with lmscore.Client(daemon.target) as c:
            assert c.tokenize("hello")
    finally:
        os.environ.pop("LMSCORE_API_KEY", None)
        if saved is not None:
            os.environ["LMSCORE_API_KEY"] = saved


def test_no_key_in_the_log(daemon):
    with daemon.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        stub.Score(score_request(), timeout=60, metadata=bearer(KEYS[0]))
        with pytest.raises(grpc.RpcError):
            stub.Score(score_request(), timeout=60, metadata=bearer("a-wrong-key-to-look-for"))
    api = Http(daemon)
    api.score({"query": [1], "items": [], "label_token_ids": [2]},
              headers={"Authorization": "Bearer another-wrong-key-to-look-for"})
    api.score({"query": [1], "items": [], "label_token_ids": [2]},
              headers={"Authorization": f"Bearer {KEYS[2]}"})
    log = daemon.log()
    assert "call finished" in log and "invalid_api_key" in log
    assert 'method="POST /v1/score"' in log
    for key in KEYS + ["a-wrong-key-to-look-for", "another-wrong-key-to-look-for"]:
        assert key not in log


def test_two_authorization_headers_are_refused(daemon):
    """Two authorization values, right then wrong or right twice, are
    refused on both protocols: which one a server reads is every proxy's
    own guess, so neither counts."""
    with daemon.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        for second in (KEYS[0], "wrong-key"):
            expect_unauthenticated(
                lambda: stub.Score(score_request(), timeout=60,
                                   metadata=bearer(KEYS[0]) + bearer(second)),
                "invalid_api_key")
        stub.Score(score_request(), timeout=60, metadata=bearer(KEYS[0]))
    api = Http(daemon)
    body = b'{"query": [1], "items": [[2]], "label_token_ids": [3]}'
    for second in (KEYS[0], "wrong-key"):
        with socket.create_connection(("127.0.0.1", api.port), timeout=60) as s:
            s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      b"Authorization: Bearer %s\r\nAuthorization: Bearer %s\r\n"
                      b"Content-Length: %d\r\n\r\n%s"
                      % (KEYS[0].encode(), second.encode(), len(body), body))
            data = read_until_close(s)
        head, _, got = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401 "), data
        assert http_error(json.loads(got)) == ("invalid_api_key", None), got


def test_a_nul_in_the_authorization_header_is_refused(daemon):
    """A valid key followed by a NUL and more bytes is a wrong key, refused
    401 invalid_api_key as JSON (with WWW-Authenticate) and the connection
    closed, never read as the key before the NUL; the same key alone is
    served."""
    api = Http(daemon)
    body = b'{"query": [1], "items": [[2]], "label_token_ids": [3]}'
    for value, status in ((b"Bearer %s\x00junk" % KEYS[0].encode(), 401),
                          (b"Bearer %s" % KEYS[0].encode(), 200)):
        with socket.create_connection(("127.0.0.1", api.port), timeout=60) as s:
            s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      b"Authorization: %s\r\nContent-Length: %d\r\n\r\n%s"
                      % (value, len(body), body))
            data = read_until_close(s)
        assert data.count(b"HTTP/1.1 ") == 1, data
        head, _, got = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 %d " % status), data
        if status == 401:
            assert b"\r\nWWW-Authenticate: Bearer" in head, head
            assert http_error(json.loads(got)) == ("invalid_api_key", None), got


@pytest.mark.parametrize("content,message", [
    ("", "holds no key"),
    ("# nothing but comments\n\n", "holds no key"),
    ("good-key\nbad key with spaces\n", "line 2 is not a bearer token"),
    ("good-key\nbad\x01key\n", "line 2 is not a bearer token"),
    ("good-key\nabc\x00def\n", "line 2 is not a bearer token"),
])
def test_bad_key_files(tmp_path, content, message):
    path = tmp_path / "keys"
    path.write_text(content)
    r = subprocess.run([LMSCORED, "--model", MODEL, "--listen", "127.0.0.1:0",
                        "--api-key-file", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr and "listening" not in r.stderr, r.stderr
    assert "bad key with spaces" not in r.stderr
    r = subprocess.run([LMSCORED, "--model", MODEL, "--listen", "127.0.0.1:0",
                        "--api-key-file", str(tmp_path / "missing")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "No such file or directory" in r.stderr, r.stderr


def test_a_key_file_that_is_no_regular_file_is_refused_at_once(tmp_path):
    """A FIFO (or a directory) as --api-key-file is refused before the
    daemon opens anything that could block: it exits at once, not waiting
    for a writer."""
    fifo = tmp_path / "keys"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        r = subprocess.run([LMSCORED, "--model", MODEL, "--listen", "127.0.0.1:0",
                            "--api-key-file", str(path)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1 and "not a regular file" in r.stderr, r.stderr
