"""Every error the daemon returns, with its google.rpc.ErrorInfo decoded from
grpc-status-details-bin; limits; overload; deadlines and cancellation stop
and free the work (the in-flight counts return to zero).
"""
import os
import signal
import threading
import time

import grpc
import pytest

from harness import Daemon, LMSCORED_TEST_HOOKS, MODEL, error_info, text, tokens
from lmscore._pb import health_pb2
from lmscore.v1 import score_pb2, score_pb2_grpc

VOCAB = 151936
DELIM = 151643


@pytest.fixture(scope="module")
def daemon():
    with Daemon("--max-items", "8", "--max-sequence-tokens", "32",
                "--max-message-bytes", "4096") as d:
        yield d


@pytest.fixture(scope="module")
def stub(daemon):
    with daemon.channel() as ch:
        yield score_pb2_grpc.ScoreServiceStub(ch)


def score_request(**kw):
    fields = dict(query=tokens([1, 2, 3]), items=[tokens([4, 5])], label_token_ids=[6, 7])
    fields.update(kw)
    return score_pb2.ScoreRequest(**fields)


def expect_error(fn, code, reason, field=None):
    with pytest.raises(grpc.RpcError) as e:
        fn()
    err = e.value
    assert err.code() == code, err
    info = error_info(err)
    if reason is None:
        assert info is None
        return err
    assert info is not None, f"no ErrorInfo in {err}"
    assert info.reason == reason
    assert info.domain == "lmscore"
    if field is not None:
        assert info.metadata["field"] == field
        assert field in err.details()  # the message names the field
    return err


INVALID = grpc.StatusCode.INVALID_ARGUMENT

CASES = {
    "empty_label_token_ids": (score_request(label_token_ids=[]), "label_token_ids"),
    "negative_token_id": (score_request(query=tokens([1, -5])), "query"),
    "token_id_exceeds_vocab": (score_request(items=[tokens([4]), tokens([VOCAB])]), "items[1]"),
    "label_over_vocab": (score_request(label_token_ids=[6, VOCAB + 3]), "label_token_ids"),
    "mixed_input_types": (score_request(query=text("hello"), items=[text(" a"), tokens([5])]),
                          "items[1]"),
    "mixed_labels": (score_request(label_texts=[" yes"]), "label_texts"),
    "missing_input": (score_request(items=[tokens([4]), score_pb2.Input()]), "items[1]"),
    "missing_query": (score_pb2.ScoreRequest(items=[tokens([4])], label_token_ids=[6]), "query"),
    "empty_query": (score_request(query=tokens([]), items=[tokens([])]), "query"),
    "too_many_items": (score_request(items=[tokens([4])] * 9), "items"),
    "sequence_too_long": (score_request(items=[tokens([4]), tokens([5] * 40)]), "items[1]"),
    "label_not_single_token": (score_request(query=text("q"), items=[text(" a")],
                                             label_token_ids=[],
                                             label_texts=[" yes", " several words here"]),
                               "label_texts[1]"),
    "unknown_algorithm": (score_request(algorithm=17), "algorithm"),
}
REASON = {"label_over_vocab": "token_id_exceeds_vocab", "mixed_labels": "mixed_input_types",
          "missing_query": "missing_field"}


@pytest.mark.parametrize("case", list(CASES))
def test_invalid_argument_reasons(stub, case):
    req, field = CASES[case]
    reason = REASON.get(case, case)
    expect_error(lambda: stub.Score(req, timeout=60), INVALID, reason, field)
    # the streaming RPCs report the same error
    expect_error(lambda: list(stub.ScoreStream(req, timeout=60)), INVALID, reason, field)


def test_score_items_reasons(stub):
    header = score_pb2.ScoreItemsHeader(query=tokens([1, 2]), label_token_ids=[6])
    batch = score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(items=[tokens([4])]))
    head = score_pb2.ScoreItemsRequest(header=header)
    expect_error(lambda: list(stub.ScoreItems(iter([batch]), timeout=60)), INVALID,
                 "missing_header", "header")
    expect_error(lambda: list(stub.ScoreItems(iter([head, batch, head]), timeout=60)), INVALID,
                 "duplicate_header", "header")
    expect_error(lambda: list(stub.ScoreItems(iter([]), timeout=60)), INVALID, "missing_header",
                 "header")
    # item indices count over the whole stream: the bad item is the 5th sent
    bad = score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(
        items=[tokens([4]), tokens([-1])]))
    err = expect_error(lambda: list(stub.ScoreItems(iter([head, batch, batch, batch, bad]),
                                                    timeout=60)),
                       INVALID, "negative_token_id", "items[4]")
    bad_header = score_pb2.ScoreItemsRequest(header=score_pb2.ScoreItemsHeader(
        query=tokens([1]), label_token_ids=[]))
    expect_error(lambda: list(stub.ScoreItems(iter([bad_header, batch]), timeout=60)), INVALID,
                 "empty_label_token_ids", "label_token_ids")
    assert err.details()


def test_malformed_messages(daemon):
    with daemon.channel() as ch:
        raw = ch.unary_unary("/lmscore.v1.ScoreService/Score")
        expect_error(lambda: raw(b"\xff\xff\xff", timeout=60), INVALID, "malformed_request")
        raw = ch.unary_unary("/grpc.health.v1.Health/Check")
        expect_error(lambda: raw(b"\x0a\x05ab", timeout=60), INVALID, "malformed_request")


def test_message_size_limits(daemon, stub):
    # a request over --max-message-bytes (4096 here) is refused with its size
    # and the limit in the message, and the reason in the ErrorInfo ...
    big = score_request(items=[tokens(list(range(1000, 4000)))])
    size = big.ByteSize()
    assert size > 4096
    err = expect_error(lambda: stub.Score(big, timeout=60), grpc.StatusCode.RESOURCE_EXHAUSTED,
                       "message_too_large")
    assert f"({size} bytes)" in err.details() and "(4096 bytes)" in err.details()
    # ... on every method, one byte over the limit; a message of exactly the
    # limit is decoded and answered (an unknown health service: NOT_FOUND)
    with daemon.channel() as ch:
        check = ch.unary_unary("/grpc.health.v1.Health/Check",
                               request_serializer=health_pb2.HealthCheckRequest.SerializeToString)
        at_limit = health_pb2.HealthCheckRequest(service="s" * 4093)
        assert at_limit.ByteSize() == 4096
        expect_error(lambda: check(at_limit, timeout=60), grpc.StatusCode.NOT_FOUND, None)
        over = health_pb2.HealthCheckRequest(service="s" * 4094)
        assert over.ByteSize() == 4097
        expect_error(lambda: check(over, timeout=60), grpc.StatusCode.RESOURCE_EXHAUSTED,
                     "message_too_large")
    # ... and in a stream: a ScoreItems batch over the limit ends the stream
    header = score_pb2.ScoreItemsRequest(header=score_pb2.ScoreItemsHeader(
        query=tokens([1, 2]), label_token_ids=[6]))
    small = score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(items=[tokens([4])]))
    huge = score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(
        items=[tokens(list(range(1000, 4000)))]))
    expect_error(lambda: list(stub.ScoreItems(iter([header, small, huge, small]), timeout=60)),
                 grpc.StatusCode.RESOURCE_EXHAUSTED, "message_too_large")
    # a response over it is refused with a reason pointing at ScoreStream
    many_labels = list(range(10, 138))
    req = score_request(items=[tokens([4])] * 8, label_token_ids=many_labels, return_logprobs=True)
    expect_error(lambda: stub.Score(req, timeout=120), grpc.StatusCode.RESOURCE_EXHAUSTED,
                 "response_too_large")
    chunks = [m for m in stub.ScoreStream(
        score_request(items=[tokens([4])] * 8, label_token_ids=many_labels[:64]), timeout=120)]
    assert chunks[-1].summary.item_count == 8


def test_no_tokenizer(tmp_path):
    hf = os.path.join(os.path.dirname(MODEL), "tiny-qwen3-hf")
    for name in ("config.json", "model.safetensors"):
        os.symlink(os.path.join(hf, name), tmp_path / name)
    with Daemon(model=str(tmp_path)) as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        assert not stub.GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=30).has_tokenizer
        assert stub.Score(score_request(), timeout=120).items
        expect_error(lambda: stub.Score(score_request(query=text("hi"), items=[text(" x")]),
                                        timeout=60), INVALID, "no_tokenizer", "query")
        expect_error(lambda: stub.Score(score_request(label_token_ids=[], label_texts=[" y"]),
                                        timeout=60), INVALID, "no_tokenizer", "label_texts")
        expect_error(lambda: stub.Tokenize(score_pb2.TokenizeRequest(text="hi"), timeout=60),
                     INVALID, "no_tokenizer", "text")


def test_delimiter_reasons():
    with Daemon("--multi-item-scoring-delimiter", str(DELIM)) as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        info = stub.GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=30)
        assert info.delimiter_token_id == DELIM
        assert stub.Score(score_request(), timeout=120).items
        expect_error(lambda: stub.Score(score_request(items=[tokens([4, DELIM])]), timeout=60),
                     INVALID, "delimiter_in_content", "items[0]")
        expect_error(lambda: stub.Score(score_request(query=tokens([1, DELIM])), timeout=60),
                     INVALID, "delimiter_in_content", "query")
        expect_error(lambda: stub.Score(score_request(query=tokens([])), timeout=60), INVALID,
                     "empty_query", "query")


def test_queue_full_is_resource_exhausted():
    # One worker whose every job first stalls 5 s, and a queue of one: of four
    # calls sent at once, at most two fit (one running, one waiting) and the
    # rest are refused at once, whatever order they arrive in.
    env = {"LMSCORE_TEST_STALL_WORKER_MS": "5000"}
    with Daemon("--workers", "1", "--queue-depth", "1", binary=LMSCORED_TEST_HOOKS,
                env=env) as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        calls = [stub.Score.future(score_request(), timeout=300) for _ in range(4)]
        ok, refused = 0, 0
        for c in calls:
            try:
                assert c.result().items
                ok += 1
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
                assert error_info(e).reason == "queue_full"
                assert "queue" in e.details()
                refused += 1
        assert ok >= 1 and refused >= 2, (ok, refused)
        stats = d.wait_idle()
        assert stats.errors_by_code["RESOURCE_EXHAUSTED"] == refused


def big_request(n_items=3000, **kw):
    return score_request(items=[tokens([1000 + i % 500, 7, 8, 9]) for i in range(n_items)],
                         algorithm=score_pb2.ALGORITHM_SERIAL, **kw)


def test_deadline_stops_the_work():
    with Daemon("--max-items", "100000", "--max-message-bytes", "64M") as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        before = d.stats()
        t0 = time.monotonic()
        expect_error(lambda: stub.Score(big_request(), timeout=0.5),
                     grpc.StatusCode.DEADLINE_EXCEEDED, None)
        expect_error(lambda: list(stub.ScoreStream(big_request(), timeout=0.5)),
                     grpc.StatusCode.DEADLINE_EXCEEDED, None)
        after = d.wait_idle(timeout=30)
        stopped_after = time.monotonic() - t0
        # the work stopped: Score's items were not counted as scored, nor
        # ScoreStream's past the chunks it finished ...
        assert after.items_total - before.items_total < 3000
        # ... long before the whole request could have been scored: serial
        # items cost alike, so ten times a tenth of it is what the whole costs
        t1 = time.monotonic()
        resp = stub.Score(big_request(300), timeout=600)
        full = 10 * (time.monotonic() - t1)
        assert len(resp.items) == 300
        assert stopped_after < full, (stopped_after, full)


def test_cancel_mid_score_items_frees_the_work():
    with Daemon("--max-items", "100000", "--max-message-bytes", "64M") as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        header = score_pb2.ScoreItemsHeader(query=tokens([1, 2, 3]), label_token_ids=[6],
                                            algorithm=score_pb2.ALGORITHM_SERIAL)
        more = threading.Event()

        def requests():
            yield score_pb2.ScoreItemsRequest(header=header)
            for k in range(1000):
                yield score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(
                    items=[tokens([100 + k, 5, 6, 7])] * 200))
            more.wait(600)  # keeps the stream open until the test cancels it

        call = stub.ScoreItems(requests(), timeout=600)
        got = 0
        for msg in call:
            got += len(msg.chunk.item_indices)
            if got >= 50:
                break
        mid = d.stats()
        assert mid.in_flight_calls == 1
        call.cancel()
        more.set()
        after = d.wait_idle(timeout=60)
        assert after.in_flight_calls == 0 and after.in_flight_jobs == 0
        assert after.items_total < 1000 * 200
        assert d.stats().errors_by_code["CANCELLED"] >= 1
        # the daemon is healthy afterwards
        assert stub.Score(score_request(), timeout=120).items


def test_draining_refuses_new_calls_and_answers_in_flight_ones():
    # the job stalls 10 s: surely still in flight when SIGTERM comes
    env = {"LMSCORE_TEST_STALL_WORKER_MS": "10000"}
    d = Daemon("--drain-timeout", "60s", binary=LMSCORED_TEST_HOOKS, env=env)
    try:
        with d.channel() as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            in_flight = stub.Score.future(score_request(), timeout=300)
            d.wait_jobs()
            d.proc.send_signal(signal.SIGTERM)
            d.wait_for_log("draining", 60)
            expect_error(lambda: stub.Score(score_request(), timeout=60),
                         grpc.StatusCode.UNAVAILABLE, "draining")
            assert in_flight.result().items  # the call in flight was answered
    finally:
        d.stop_clean()


METHODS = {
    "/lmscore.v1.ScoreService/Score": "unary",
    "/lmscore.v1.ScoreService/ScoreStream": "server_stream",
    "/lmscore.v1.ScoreService/ScoreItems": "bidi",
    "/lmscore.v1.ScoreService/Tokenize": "unary",
    "/lmscore.v1.ScoreService/GetModelInfo": "unary",
    "/grpc.health.v1.Health/Check": "unary",
    "/grpc.health.v1.Health/Watch": "server_stream",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": "bidi",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": "bidi",
}


def test_random_bytes_never_hurt(daemon):
    """Random payloads on every method: each call ends with a status (never
    INTERNAL, UNKNOWN or a dropped connection) and the daemon stays up and
    exits clean under the sanitizers."""
    import random
    rng = random.Random(1234)
    bad = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNAVAILABLE}
    with daemon.channel() as ch:
        for path, kind in METHODS.items():
            for _ in range(40):
                payload = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
                try:
                    if kind == "unary":
                        ch.unary_unary(path)(payload, timeout=5)
                    elif kind == "server_stream":
                        for _ in ch.unary_stream(path)(payload, timeout=2):
                            pass
                    else:
                        for _ in ch.stream_stream(path)(iter([payload, payload]), timeout=5):
                            pass
                except grpc.RpcError as e:
                    assert e.code() not in bad, (path, payload, e)
                    if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                        assert path.endswith("Watch"), (path, payload)  # Watch never ends
    daemon.wait_idle()
