"""What the daemon's log lines carry, read back by parsing them: JSON values
keep their types (numbers are JSON numbers), and every line about a call
names the call's request id (the client's x-request-id, or one the daemon
made, returned in the response's x-request-id metadata either way) and the
trace id of a valid W3C traceparent; a malformed traceparent is ignored,
never an error. HTTP API calls carry them the same way (the X-Request-Id and
traceparent headers, X-Request-Id answered).
"""
import json
import os
import re
import socket
import subprocess

import grpc
import pytest

from harness import (LMSCORED, LMSCORED_TEST_HOOKS, MODEL, Daemon, Http, Metrics,
                     read_until_close, tokens)
from lmscore.v1 import score_pb2

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
MADE_ID = re.compile(r"[0-9a-f]{32}")


@pytest.fixture(scope="module")
def daemon():
    with Daemon("--log-format", "json", "--log-level", "debug", "--http-listen",
                "127.0.0.1:0") as d:
        yield d


@pytest.fixture(scope="module")
def stub(daemon):
    with daemon.channel() as ch:
        yield daemon.stub(ch)


def records(daemon):
    return [json.loads(line) for line in daemon.log().splitlines()]


def call_records(daemon, request_id):
    return [r for r in records(daemon) if r.get("request_id") == request_id]


def finished(daemon, request_id):
    """The call's "call finished" record: logged once its last reference
    goes, which may be just after the client has the answer."""
    daemon.wait_for_log(r'"msg":"call finished".*"request_id":"%s"' % re.escape(request_id), 30)
    (rec,) = [r for r in call_records(daemon, request_id) if r["msg"] == "call finished"]
    return rec


def score(stub, metadata=()):
    request = score_pb2.ScoreRequest(query=tokens([1, 2, 3]), items=[tokens([4, 5])],
                                     label_token_ids=[6])
    _, call = stub.Score.with_call(request, metadata=list(metadata), timeout=120)
    return call


def response_request_id(call):
    (value,) = [m.value for m in call.initial_metadata() if m.key == "x-request-id"]
    return value


def test_every_line_is_json_with_typed_values(daemon, stub):
    score(stub, [("x-request-id", "typed-1")])
    finished(daemon, "typed-1")
    recs = records(daemon)
    by_msg = {r["msg"]: r for r in recs}
    listening = by_msg["listening"]
    assert type(listening["port"]) is int and listening["port"] == daemon.port
    assert type(listening["address"]) is str and listening["tls"] == "off"
    loaded = by_msg["model loaded and warmed up"]
    assert type(loaded["vocab"]) is int and type(loaded["weight_bytes"]) is int
    assert type(loaded["ms"]) is int and type(loaded["model"]) is str
    threads = by_msg["engine threads"]
    assert all(type(threads[k]) is int for k in ("workers", "threads_per_worker", "budget"))
    (scored,) = [r for r in call_records(daemon, "typed-1") if r["msg"] == "scored"]
    assert type(scored["items"]) is int and scored["items"] == 1
    assert type(scored["cached_tokens"]) is int
    assert type(scored["engine_ms"]) is float and scored["engine_ms"] > 0
    done = finished(daemon, "typed-1")
    assert type(done["ms"]) is float and done["ms"] >= scored["engine_ms"]
    assert done["code"] == "OK"


def test_the_client_request_id_is_on_every_line_of_the_call_and_returned(daemon, stub):
    call = score(stub, [("x-request-id", "client-id-42")])
    assert response_request_id(call) == "client-id-42"
    finished(daemon, "client-id-42")
    msgs = sorted(r["msg"] for r in call_records(daemon, "client-id-42"))
    assert msgs == ["call finished", "scored"]
    for rec in call_records(daemon, "client-id-42"):
        assert rec["method"] == "/lmscore.v1.ScoreService/Score"


def test_a_failed_call_returns_its_request_id_too(daemon, stub):
    with pytest.raises(grpc.RpcError) as e:
        stub.Score(score_pb2.ScoreRequest(), metadata=[("x-request-id", "failing-1")],
                   timeout=60)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert ("x-request-id", "failing-1") in [(m.key, m.value) for m in e.value.initial_metadata()]
    done = finished(daemon, "failing-1")
    assert done["code"] == "INVALID_ARGUMENT" and done["reason"] == "missing_field"


def test_without_a_client_id_one_is_made_per_call(daemon, stub):
    made = [response_request_id(score(stub)) for _ in range(3)]
    assert all(MADE_ID.fullmatch(m) for m in made), made
    assert len(set(made)) == 3
    for request_id in made:
        assert finished(daemon, request_id)["code"] == "OK"


@pytest.mark.parametrize("client_id", ["x" * 129, "has space", ""])
def test_an_unusable_client_id_is_replaced(daemon, stub, client_id):
    request_id = response_request_id(score(stub, [("x-request-id", client_id)]))
    assert MADE_ID.fullmatch(request_id), request_id
    finished(daemon, request_id)


def test_the_longest_client_id_is_kept(daemon, stub):
    client_id = "A-z_0.9:~" * 14 + "12"
    assert len(client_id) == 128
    assert response_request_id(score(stub, [("x-request-id", client_id)])) == client_id
    finished(daemon, client_id)


VALID_TRACEPARENTS = {
    "version 00": f"00-{TRACE_ID}-{PARENT_ID}-01",
    "not sampled": f"00-{TRACE_ID}-{PARENT_ID}-00",
    "a later version": f"01-{TRACE_ID}-{PARENT_ID}-01",
    "a later version with more fields": f"cc-{TRACE_ID}-{PARENT_ID}-01-what-comes-next",
}

INVALID_TRACEPARENTS = {
    "upper-case hex": f"00-{TRACE_ID.upper()}-{PARENT_ID}-01",
    "version ff": f"ff-{TRACE_ID}-{PARENT_ID}-01",
    "all-zero trace id": f"00-{'0' * 32}-{PARENT_ID}-01",
    "all-zero parent id": f"00-{TRACE_ID}-{'0' * 16}-01",
    "version 00 with more fields": f"00-{TRACE_ID}-{PARENT_ID}-01-extra",
    "a later version going on without a dash": f"01-{TRACE_ID}-{PARENT_ID}-01x",
    "trace id one digit short": f"00-{TRACE_ID[:-1]}-{PARENT_ID}-01",
    "underscores for dashes": f"00_{TRACE_ID}_{PARENT_ID}_01",
    "flags not hex": f"00-{TRACE_ID}-{PARENT_ID}-0g",
    "version not hex": f"0x-{TRACE_ID}-{PARENT_ID}-01",
    "empty": "",
}


@pytest.mark.parametrize("name", VALID_TRACEPARENTS)
def test_a_valid_traceparent_puts_its_trace_id_on_the_lines(daemon, stub, name):
    request_id = f"trace-valid-{name.replace(' ', '-')}"
    score(stub, [("x-request-id", request_id), ("traceparent", VALID_TRACEPARENTS[name])])
    finished(daemon, request_id)
    recs = call_records(daemon, request_id)
    assert len(recs) == 2 and all(r["trace_id"] == TRACE_ID for r in recs), recs


@pytest.mark.parametrize("name", INVALID_TRACEPARENTS)
def test_a_malformed_traceparent_is_ignored(daemon, stub, name):
    request_id = f"trace-invalid-{name.replace(' ', '-')}"
    call = score(stub, [("x-request-id", request_id), ("traceparent", INVALID_TRACEPARENTS[name])])
    assert call.code() == grpc.StatusCode.OK
    done = finished(daemon, request_id)
    assert done["code"] == "OK" and "trace_id" not in done


def test_a_repeated_traceparent_is_ignored(daemon, stub):
    call = score(stub, [("x-request-id", "trace-twice"),
                        ("traceparent", VALID_TRACEPARENTS["version 00"]),
                        ("traceparent", f"00-{'1' * 32}-{PARENT_ID}-01")])
    assert call.code() == grpc.StatusCode.OK
    assert "trace_id" not in finished(daemon, "trace-twice")


def test_text_logs_carry_the_same_fields():
    with Daemon("--log-level", "debug") as d:
        with d.channel() as ch:
            score(d.stub(ch), [("x-request-id", "text-1"),
                               ("traceparent", VALID_TRACEPARENTS["version 00"])])
        line = d.wait_for_log(r'msg="call finished".*request_id=text-1', 60)
        assert f"trace_id={TRACE_ID}" in line and re.search(r" ms=\d+\.\d{3}\b", line), line


def test_http_calls_carry_request_ids_and_trace_ids(daemon):
    api = Http(daemon)
    body = {"query": [1, 2, 3], "items": [[4, 5]], "label_token_ids": [6]}
    status, headers, _ = api.score(body, headers={
        "X-Request-Id": "http-1", "traceparent": VALID_TRACEPARENTS["version 00"]})
    assert status == 200 and headers["X-Request-Id"] == "http-1"
    done = finished(daemon, "http-1")
    assert done["method"] == "POST /v1/score" and done["trace_id"] == TRACE_ID
    assert sorted(r["msg"] for r in call_records(daemon, "http-1")) == ["call finished", "scored"]
    # a refused request too, and one without an id gets a made one
    status, headers, _ = api.post("/v1/nothing", {}, headers={"X-Request-Id": "http-404"})
    assert status == 404 and headers["X-Request-Id"] == "http-404"
    assert finished(daemon, "http-404")["reason"] == "not_found"
    status, headers, _ = api.score(body)
    assert status == 200 and MADE_ID.fullmatch(headers["X-Request-Id"])
    assert finished(daemon, headers["X-Request-Id"])["code"] == "OK"
    # a repeated traceparent is ambiguous, as on gRPC
    conn = api.connection()
    conn.putrequest("POST", "/v1/score")
    for name, value in [("Content-Type", "application/json"), ("X-Request-Id", "http-twice"),
                        ("traceparent", VALID_TRACEPARENTS["version 00"]),
                        ("traceparent", f"00-{'1' * 32}-{PARENT_ID}-01")]:
        conn.putheader(name, value)
    data = json.dumps(body).encode()
    conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data)
    assert conn.getresponse().status == 200
    conn.close()
    assert "trace_id" not in finished(daemon, "http-twice")


def raw_path_request(port, path):
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\n"
                  b"Content-Length: 2\r\nConnection: close\r\n\r\n{}" % path[-6:].hex().encode())
        read_until_close(s)
    return path[-6:].hex()


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_bytes_that_are_not_utf8_are_escaped(daemon, log_format):
    """A client's path with bytes that are not UTF-8 (no key is needed to
    send one) reaches the log escaped as \\xHH: every line stays valid
    UTF-8, and JSON, with the bytes still readable."""
    d = daemon if log_format == "json" else Daemon("--log-level", "debug",
                                                   "--http-listen", "127.0.0.1:0")
    try:
        api = Http(d)
        request_id = raw_path_request(api.port, b"/v1/\xff\xfe\xc3(abc")
        line = d.wait_for_log(r"call finished.*%s" % request_id, 30)
        assert "\ufffd" not in d.log()  # the harness decodes with errors="replace"
        if log_format == "json":
            for text in d.log().splitlines():
                json.loads(text)
            assert json.loads(line)["method"] == "POST /v1/\\xff\\xfe\\xc3(abc", line
        else:
            assert 'method="POST /v1/\\xff\\xfe\\xc3(abc"' in line, line
    finally:
        if d is not daemon:
            d.stop()


# --- start-up -------------------------------------------------------------

def run_daemon(*args, env=None):
    """lmscored with these flags, to its exit (it must fail to start):
    (exit status, JSON records of its stderr)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LMSCORE_")}
    result = subprocess.run([LMSCORED, "--model", MODEL, "--log-format", "json", *args],
                            capture_output=True, text=True, timeout=180, env={**clean, **(env or {})})
    recs = []
    for line in result.stderr.splitlines():
        try:
            recs.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}\n{result.stderr}")
    return result.returncode, recs


@pytest.mark.parametrize("flag", ["--listen", "--http-listen", "--metrics-listen"])
def test_a_busy_port_is_one_record_with_the_port_and_the_cause(flag):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = ["--listen", "127.0.0.1:0"] if flag != "--listen" else []
        status, recs = run_daemon(*args, flag, f"127.0.0.1:{port}")
    assert status == 1, recs
    errors = [r for r in recs if r["level"] in ("error", "warning")]
    (rec,) = errors
    assert rec["msg"] == "cannot listen" and rec["field"] == flag[2:], rec
    assert rec["port"] == port and rec["errno"] == "EADDRINUSE", rec
    assert rec["cause"] == os.strerror(98) and f"port {port}" in rec["error"], rec


def test_grpc_cores_own_messages_are_records():
    # a socket path gRPC cannot bind: gRPC core says why in its own log
    status, recs = run_daemon("--listen", "unix:/nonexistent-lmscore-dir/s.sock")
    assert status == 1, recs
    (grpc_rec,) = [r for r in recs if r["msg"] == "gRPC"]
    assert grpc_rec["level"] == "error" and "No such file or directory" in grpc_rec["text"]
    assert grpc_rec["file"].endswith(".cc") and type(grpc_rec["line"]) is int, grpc_rec
    assert recs[-1]["msg"] == "cannot start the gRPC server", recs


def test_grpc_debug_messages_follow_the_log_level():
    d = Daemon("--log-format", "json", "--log-level", "debug",
               env={"GRPC_VERBOSITY": "debug"})
    try:
        recs = [json.loads(line) for line in d.log().splitlines()]
        assert any(r["msg"] == "gRPC" and r["level"] == "debug" for r in recs), recs
    finally:
        d.stop_clean()
    d = Daemon("--log-format", "json", env={"GRPC_VERBOSITY": "debug"})
    try:
        recs = [json.loads(line) for line in d.log().splitlines()]
        grpc_levels = {r["level"] for r in recs if r["msg"] == "gRPC"}
        assert grpc_levels and "debug" not in grpc_levels, recs
    finally:
        d.stop_clean()


def test_colon_port_listens_on_every_address():
    with Daemon("--listen", ":0", "--http-listen", ":0", "--metrics-listen", ":0") as d:
        for msg in ("listening", "HTTP listening", "metrics listening"):
            assert "address=0.0.0.0:0 " in d.wait_for_log(f'msg="{msg}"', 10)
        # reached on loopback: the gRPC health check (the harness' own),
        # a scrape and an HTTP call
        assert Metrics(d).scrape()
        status, _, _ = Http(d).score({"query": [1], "items": [[2]], "label_token_ids": [3]})
        assert status == 200


def test_a_model_load_says_what_it_loads_and_that_it_goes_on():
    d = Daemon("--log-format", "json", binary=LMSCORED_TEST_HOOKS,
               env={"LMSCORE_TEST_LOAD_DELAY_MS": "6000"}, wait_serving=False)
    try:
        d.wait_serving()
        recs = [json.loads(line) for line in d.log().splitlines()]
        msgs = [r["msg"] for r in recs]
        loading = recs[msgs.index("loading model")]
        assert loading["path"] == MODEL and loading["format"] == "gguf"
        assert loading["bytes"] == os.path.getsize(MODEL)
        progress = [r for r in recs if r["msg"] == "still loading the model"]
        assert progress and progress[0]["ms"] >= 5000, progress
        assert msgs.index("listening") < msgs.index("loading model") < \
            msgs.index("still loading the model") < msgs.index("model loaded and warmed up")
    finally:
        d.stop_clean()


def test_progress_lines_name_the_engines_step_and_how_far_it_got():
    # a line every millisecond (the test-hooks binary's interval) while the
    # engine quantises the weights to int8
    d = Daemon("--log-format", "json", "--precision", "int8", binary=LMSCORED_TEST_HOOKS,
               env={"LMSCORE_TEST_LOAD_PROGRESS_MS": "1"})
    try:
        lines = [r for r in map(json.loads, d.log().splitlines())
                 if r["msg"] == "still loading the model"]
    finally:
        d.stop_clean()
    stepped = [r for r in lines if "step" in r]
    assert stepped, lines
    assert {r["step"] for r in stepped} <= {"packing the weights", "converting the weights"}
    assert all(0 <= r["percent"] <= 100 and type(r["percent"]) is int for r in stepped), stepped
    assert [r["ms"] for r in lines] == sorted(r["ms"] for r in lines)


def test_a_directory_model_is_safetensors_and_its_bytes_are_the_shards():
    model = os.path.join(os.path.dirname(MODEL), "tiny-llama-sharded-hf")
    with Daemon("--log-format", "json", model=model) as d:
        (loading,) = [r for r in map(json.loads, d.log().splitlines())
                      if r["msg"] == "loading model"]
    shards = [f for f in os.listdir(model) if f.endswith(".safetensors")]
    assert len(shards) == 3 and loading["format"] == "safetensors"
    assert loading["bytes"] == sum(os.path.getsize(os.path.join(model, f)) for f in shards)
