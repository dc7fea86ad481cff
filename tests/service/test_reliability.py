"""The daemon under hostile or careless clients: what a client sees when it
sends garbage, oversized or invalid messages, cancels in storms or holds
connections open, and what every call gets when SIGTERM comes under load.
Each test replays one class of an adversarial run; docs/operations.md
states the guarantees they check. Random payloads on every method and the
boundary cases of every limit are service.errors' (test_random_bytes_never_hurt,
test_invalid_argument_reasons, test_message_size_limits).
"""
import collections
import datetime
import os
import random
import re
import signal
import socket
import threading
import time

import grpc
import pytest

from harness import (Daemon, LMSCORED_TEST_HOOKS, RssSampler, error_info, steady_memory_env, text,
                     tokens)
from lmscore.v1 import score_pb2, score_pb2_grpc


def log_time(line):
    """The timestamp of a text log record, in seconds."""
    ts = re.search(r"ts=(\S+)", line).group(1)
    return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def test_sigterm_with_idle_connections_stops_at_once():
    """Idle connections do not hold the shutdown: the daemon stops within
    milliseconds of SIGTERM and does not claim calls were still running."""
    d = Daemon()
    channels = [d.channel() for _ in range(20)]
    try:
        for ch in channels:
            d.stub(ch).GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=60)
        d.proc.send_signal(signal.SIGTERM)
        signalled = log_time(d.wait_for_log(r'msg="signal received', 60))
        stopped = log_time(d.wait_for_log(r'msg="?stopped', 60))
        d.stop_clean()
        assert stopped - signalled < 0.5, d.log()
        assert "still running" not in d.log()
    finally:
        d.stop(signal.SIGKILL)
        for ch in channels:
            ch.close()


def score_request(n_items):
    return score_pb2.ScoreRequest(query=tokens([1, 2, 3, 4]), items=[tokens([5, 6, 7])] * n_items,
                                  label_token_ids=[8, 9])


def items_requests(n_batches):
    yield score_pb2.ScoreItemsRequest(
        header=score_pb2.ScoreItemsHeader(query=tokens([1, 2, 3]), label_token_ids=[8, 9]))
    for _ in range(n_batches):
        yield score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(items=[tokens([5, 6])] * 4))


def one_scoring_call(stub, rnd):
    """A random scoring call; (method, code name, ErrorInfo reason or None)."""
    kind = rnd.choice(["Score", "ScoreStream", "ScoreItems"])
    try:
        if kind == "Score":
            stub.Score(score_request(rnd.randint(1, 30)), timeout=60)
        elif kind == "ScoreStream":
            for _ in stub.ScoreStream(score_request(rnd.randint(1, 30)), timeout=60):
                pass
        else:
            for _ in stub.ScoreItems(items_requests(rnd.randint(1, 6)), timeout=60):
                pass
        return kind, "OK", None
    except grpc.RpcError as e:
        info = error_info(e)
        return kind, e.code().name, info.reason if info else None, e.details()


def server_outcomes(d):
    """(code, reason) of every scoring call the daemon logged as finished
    (every call at --log-level debug; from the drain on, at any level)."""
    out = collections.Counter()
    for line in d.log().splitlines():
        if 'msg="call finished"' in line and "ScoreService/Score" in line:
            reason = re.search(r"reason=(\S+)", line)
            out[(re.search(r"code=(\S+)", line).group(1), reason and reason.group(1))] += 1
    return out


def sigterm_under_load(d, polite, n_clients):
    """n_clients clients mixing Score, ScoreStream and ScoreItems until SIGTERM; a
    polite client stops at its first UNAVAILABLE (draining: it goes
    elsewhere), the others keep calling until the daemon is gone. Returns
    the clients' results and the seconds from the signal to "stopped"."""
    results, stop = [], threading.Event()

    def client(seed):
        rnd = random.Random(seed)
        with d.channel() as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            while not stop.is_set():
                r = one_scoring_call(stub, rnd)
                results.append(r)
                if r[1] == "UNAVAILABLE" and (polite or r[2] is None):
                    return

    # daemon threads: a client library that hangs must fail the test, not
    # keep pytest from exiting
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(n_clients)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        while sum(r[1] == "OK" for r in results) < 40:
            assert time.monotonic() < deadline and d.proc.poll() is None
            time.sleep(0.05)
        d.proc.send_signal(signal.SIGTERM)
        signalled = log_time(d.wait_for_log(r'msg="signal received', 60))
        stopped = log_time(d.wait_for_log(r'msg="?stopped', 120))
        d.stop_clean()
    finally:
        stop.set()
        d.stop(signal.SIGKILL)
        for t in threads:
            t.join(120)
    assert not any(t.is_alive() for t in threads), "a client call never ended"
    return results, stopped - signalled


def test_sigterm_under_load_loses_no_call():
    """Clients that go elsewhere once told the daemon is draining (as
    docs/deployment.md asks): every call ends OK or with an ErrorInfo
    (draining), none is cancelled without details (the drain waits until no
    call has come or ended for 250 ms, so a client answered OK has sent its
    next call, and been told draining, before gRPC core's shutdown would
    cancel it), and the client sees exactly the outcomes the daemon sent. A
    call that never reached the daemon fails UNAVAILABLE at the client's
    transport, which gRPC clients retry."""
    d = Daemon("--workers", "2", "--queue-depth", "256", "--drain-timeout", "20s",
               "--log-level", "debug")
    results, _ = sigterm_under_load(d, polite=True, n_clients=8)
    lost = [r for r in results if r[1] != "OK" and r[2] is None and r[1] != "UNAVAILABLE"]
    assert not lost, lost
    client_side = collections.Counter((r[1], r[2]) for r in results if r[1] == "OK" or r[2])
    assert client_side == server_outcomes(d), (client_side, server_outcomes(d))
    assert "drain timeout" not in d.log() and "still running" not in d.log()


def test_sigterm_under_load_from_clients_that_keep_calling():
    """Clients that keep calling through the drain: the calls refused with
    draining do not hold the drain up (it ends in seconds, not at
    --drain-timeout), and at the default log level every call the drain saw
    is logged with its outcome: OK or draining, exactly as many draining as
    the clients were told (the calls that ended before the signal are not
    logged at info). A CANCELLED without details here is a call gRPC core
    cancelled before the daemon saw it (docs/operations.md)."""
    d = Daemon("--workers", "2", "--queue-depth", "256", "--drain-timeout", "20s")
    results, drain_s = sigterm_under_load(d, polite=False, n_clients=16)
    server_side = server_outcomes(d)
    assert set(server_side) <= {("OK", None), ("UNAVAILABLE", "draining")}, server_side
    told_draining = sum(r[1] == "UNAVAILABLE" and r[2] == "draining" for r in results)
    assert told_draining > 0 and told_draining == server_side[("UNAVAILABLE", "draining")]
    assert server_side[("OK", None)] <= sum(r[1] == "OK" for r in results)
    assert drain_s < 10, d.log()
    assert "drain timeout" not in d.log() and "still running" not in d.log()


def test_calls_past_the_drain_timeout_end_with_details():
    """A call still running when --drain-timeout ends, and an idle reflection
    stream, end UNAVAILABLE (draining) with an ErrorInfo, not cancelled."""
    # two workers: both calls stall at once and are done well within the
    # 2 s the process has after --drain-timeout
    d = Daemon("--drain-timeout", "300ms", "--workers", "2", binary=LMSCORED_TEST_HOOKS,
               env={"LMSCORE_TEST_STALL_WORKER_MS": "1500"})
    try:
        with d.channel() as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            calls = [stub.Score.future(score_request(2), timeout=120) for _ in range(2)]
            reflection = ch.stream_stream(
                "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")(
                    iter(threading.Event().wait, True), timeout=120)
            deadline = time.monotonic() + 60
            while d.stats().in_flight_calls < 2:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            d.proc.send_signal(signal.SIGTERM)
            for c in calls + [reflection]:
                with pytest.raises(grpc.RpcError) as e:
                    c.result() if c in calls else next(c)
                assert e.value.code() == grpc.StatusCode.UNAVAILABLE, e.value
                assert error_info(e.value) is not None, (e.value, d.log())
                assert error_info(e.value).reason == "draining"
        d.stop_clean()
    finally:
        d.stop(signal.SIGKILL)


def test_counters_are_settled_when_the_answer_arrives():
    """GetModelInfo right after a call's answer shows no call and no job of
    it in flight, and a failed call already in errors_by_code: the counters
    move before the status is sent."""
    with Daemon() as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)

        def invalid():
            with pytest.raises(grpc.RpcError) as e:
                stub.Score(score_pb2.ScoreRequest(query=tokens([1]), items=[tokens([10 ** 9])],
                                                  label_token_ids=[8]), timeout=60)
            assert error_info(e.value).reason == "token_id_exceeds_vocab"
        calls = [lambda: stub.Score(score_request(2), timeout=60),
                 lambda: list(stub.ScoreStream(score_request(2), timeout=60)),
                 lambda: list(stub.ScoreItems(items_requests(1), timeout=60)),
                 lambda: stub.Tokenize(score_pb2.TokenizeRequest(text="a b"), timeout=60),
                 invalid]
        busy, uncounted, failed = [], [], 0
        for i in range(250):
            calls[i % len(calls)]()
            failed += calls[i % len(calls)] is invalid
            st = stub.GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=60).stats
            if st.in_flight_calls or st.in_flight_jobs:
                busy.append((i % len(calls), st.in_flight_calls, st.in_flight_jobs))
            if st.errors_by_code["INVALID_ARGUMENT"] != failed:
                uncounted.append((i, st.errors_by_code["INVALID_ARGUMENT"], failed))
        assert not busy, busy
        assert not uncounted, uncounted


def established_connections(port):
    """TCP connections to port in the ESTABLISHED state (the server's side)."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                n += int(local.split(":")[1], 16) == port and state == "01"
    return n


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_idle_connections_and_silent_streams_are_closed():
    """--max-connection-idle closes connections without calls; a stream
    that sends nothing lasts at most --max-connection-age plus its grace."""
    with Daemon("--max-connection-idle", "1s", "--max-connection-age", "2s",
                "--max-connection-age-grace", "1s") as d:
        # each channel its own connection (they would share one by default)
        channels = [d.channel(**{"grpc.use_local_subchannel_pool": 1}) for _ in range(30)]
        try:
            for ch in channels:
                d.stub(ch).GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=60)
            assert established_connections(d.port) >= 30
            wait_until(lambda: established_connections(d.port) == 0, 30,
                       "idle connections still open")
            silent = d.stub(channels[0]).ScoreItems(iter(threading.Event().wait, True),
                                                    timeout=120)
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as e:
                next(silent)
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE, e.value
            assert time.monotonic() - started < 30
        finally:
            for ch in channels:
                ch.close()


def pings_until_goaway(port, interval, count):
    """Sends count HTTP/2 pings on a connection without calls, one every
    interval seconds; True when the server answered with GOAWAY
    too_many_pings."""
    ping = (8).to_bytes(3, "big") + bytes([6, 0]) + bytes(4) + bytes(8)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
        received = b""
        sock.settimeout(0.01)
        for _ in range(count):
            try:
                sock.sendall(ping)
                time.sleep(interval)
                received += sock.recv(65536)
            except socket.timeout:
                pass
            except OSError:
                break
            if b"too_many_pings" in received:
                break
    # a GOAWAY frame (type 7, on stream 0) carrying the debug data
    return b"too_many_pings" in received and bytes([7, 0, 0, 0, 0, 0]) in received


@pytest.mark.parametrize("min_time,interval,sent_away", [("5s", 0.1, True), ("200ms", 0.5, False)])
def test_keepalive_pings_are_held_to_the_minimum_interval(min_time, interval, sent_away):
    """A client may ping a connection without calls every --keepalive-min-time
    (gRPC's own default would send it away at any pace under 5 minutes); one
    that pings faster gets GOAWAY too_many_pings."""
    with Daemon("--keepalive-min-time", min_time) as d:
        assert pings_until_goaway(d.port, interval, 8) == sent_away


def raw_call(ch, path, payload, timeout=60):
    """One call with a raw request message; (code name, ErrorInfo or None,
    raw response messages)."""
    try:
        if path.endswith("ScoreItems"):
            out = list(ch.stream_stream(path)(iter(payload), timeout=timeout))
        elif path.endswith("ScoreStream"):
            out = list(ch.unary_stream(path)(payload, timeout=timeout))
        else:
            out = [ch.unary_unary(path)(payload, timeout=timeout)]
        return "OK", None, out
    except grpc.RpcError as e:
        return e.code().name, error_info(e), []


SCORE = "/lmscore.v1.ScoreService/Score"
SCORE_ITEMS = "/lmscore.v1.ScoreService/ScoreItems"
TOKENIZE = "/lmscore.v1.ScoreService/Tokenize"


def text_request(query="Is it red?", items=(" apple", " sky"), labels=(" yes", " no")):
    return score_pb2.ScoreRequest(query=text(query), items=[text(i) for i in items],
                                  label_texts=list(labels)).SerializeToString()


def with_bytes(message, good, bad):
    """message with the string good replaced by the raw bytes bad (a string
    no protobuf library would build: invalid UTF-8)."""
    assert len(good) == len(bad) and message.count(good.encode()) == 1
    return message.replace(good.encode(), bad)


def items_stream(header_query="Q?", batch=(" a",)):
    return [score_pb2.ScoreItemsRequest(header=score_pb2.ScoreItemsHeader(
                query=text(header_query), label_texts=[" yes"])).SerializeToString(),
            score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(
                items=[text(i) for i in batch])).SerializeToString()]


TEXT_CASES = {
    "nul in the query": (SCORE, text_request(query="hello\0world"), "nul_in_text", "query.text"),
    "nul in an item": (SCORE, text_request(items=(" a", " b\0c")), "nul_in_text", "items[1].text"),
    "nul in a label": (SCORE, text_request(labels=(" no", " yes\0junk")), "nul_in_text",
                       "label_texts[1]"),
    "nul to Tokenize": (TOKENIZE, score_pb2.TokenizeRequest(text="a\0b").SerializeToString(),
                        "nul_in_text", "text"),
    "nul in a stream header": (SCORE_ITEMS, items_stream(header_query="Q\0?"), "nul_in_text",
                               "header.query.text"),
    "nul in a stream batch": (SCORE_ITEMS, items_stream(batch=(" a", " b\0")), "nul_in_text",
                              "items.items[1].text"),
    "invalid utf-8 in the query": (SCORE, with_bytes(text_request(query="xx abc"), "xx abc",
                                                     b"\xff\xfe abc"), "invalid_utf8",
                                   "query.text"),
    "a lone continuation byte": (SCORE, with_bytes(text_request(items=(" a", " bcd")), " bcd",
                                                   b" b\x80d"), "invalid_utf8", "items[1].text"),
    "an overlong form": (SCORE, with_bytes(text_request(labels=(" ab",)), " ab", b"\xc0\xaf!"),
                         "invalid_utf8", "label_texts[0]"),
    "a surrogate": (TOKENIZE, with_bytes(score_pb2.TokenizeRequest(text="abc").SerializeToString(),
                                         "abc", b"\xed\xa0\x80"), "invalid_utf8", "text"),
    "invalid utf-8 in a stream batch": (SCORE_ITEMS, [items_stream()[0], with_bytes(
        items_stream(batch=(" zz",))[1], " zz", b" \xe2\x82")], "invalid_utf8",
                                        "items.items[0].text"),
}


@pytest.fixture(scope="module")
def daemon():
    with Daemon() as d:
        yield d


@pytest.mark.parametrize("case", TEXT_CASES)
def test_texts_with_nul_or_invalid_utf8_are_refused(daemon, case):
    """A NUL would cut the text where the daemon reads it, and invalid UTF-8
    is not a proto3 string: both are INVALID_ARGUMENT naming the field, never
    a score of some other text."""
    path, payload, reason, field = TEXT_CASES[case]
    with daemon.channel() as ch:
        code, info, _ = raw_call(ch, path, payload)
    assert (code, info and info.reason, info and info.metadata["field"]) == \
        ("INVALID_ARGUMENT", reason, field)


def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7f | 0x80])
        n >>= 7
    return out + bytes([n])


def field(number, wire_type, payload=b""):
    """One encoded field: a LEN payload gets its length."""
    tag = varint(number << 3 | wire_type)
    return tag + (varint(len(payload)) + payload if wire_type == 2 else payload)


def test_fields_protobuf_skips_are_skipped(daemon):
    """Valid protobuf that protobuf-c alone refuses: a known field with
    another wire type and groups (known or unknown field numbers, at the top
    and nested) are skipped as unknown fields, and the call scores exactly
    like the message without them."""
    item = score_pb2.Input(token_ids=score_pb2.TokenIds(ids=[5, 6])).SerializeToString()
    base = score_pb2.ScoreRequest(query=tokens([1, 2, 3]), label_token_ids=[8, 9]).SerializeToString()
    group = field(99, 3, field(1, 0, b"\x07") + field(98, 3, b"") + field(98, 4)) + field(99, 4)
    odd = (field(5, 2, b"\x01")                    # apply_softmax (a bool) as bytes
           + field(8, 5, b"\x02\x00\x00\x00")      # algorithm (an enum) as fixed32
           + group                                 # an unknown group
           + field(6, 3, b"") + field(6, 4)        # item_first as a group
           + field(1000, 0, b"\x01"))              # an unknown varint
    nested = field(2, 2, item + field(7, 1, bytes(8)) + group)  # items[0] with extras
    with daemon.channel() as ch:
        plain = raw_call(ch, SCORE, base + field(2, 2, item))
        skipped = raw_call(ch, SCORE, base + odd + nested)
    assert plain[0] == "OK" and skipped[0] == "OK", (plain[:2], skipped[:2])
    a = score_pb2.ScoreResponse.FromString(plain[2][0])
    b = score_pb2.ScoreResponse.FromString(skipped[2][0])
    assert [list(i.scores) for i in a.items] == [list(i.scores) for i in b.items]


VALID_MESSAGES = {
    SCORE: text_request(),
    "/lmscore.v1.ScoreService/ScoreStream": text_request(),
    TOKENIZE: score_pb2.TokenizeRequest(text="a b c", add_special_tokens=True).SerializeToString(),
    "/lmscore.v1.ScoreService/GetModelInfo": b"",
    "/grpc.health.v1.Health/Check": b"\x0a\x17lmscore.v1.ScoreService",
}


def test_truncated_messages_on_every_method(daemon):
    """Every prefix of a valid request, on every method: each call ends with
    a status of its own (OK, or INVALID_ARGUMENT with an ErrorInfo), never a
    crash, INTERNAL or UNKNOWN, and the daemon is idle afterwards."""
    with daemon.channel() as ch:
        for path, message in VALID_MESSAGES.items():
            for cut in range(len(message)):
                code, info, _ = raw_call(ch, path, message[:cut])
                assert code == "OK" or (code == "INVALID_ARGUMENT" and info), (path, cut, code)
        stream = items_stream()
        for cut in range(len(stream[1])):
            code, info, _ = raw_call(ch, SCORE_ITEMS, [stream[0], stream[1][:cut]])
            assert code == "OK" or (code == "INVALID_ARGUMENT" and info), (cut, code)
    daemon.wait_idle()


def peak_rss_rise_mb(d, calls):
    """Runs calls (functions) at once; the daemon's peak RSS rise over its
    level before, in MB."""
    time.sleep(0.3)
    base = d.rss_kb()
    sampler = RssSampler(d, period=0.01)
    threads = [threading.Thread(target=c) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    sampler.stop()
    return (sampler.max_kb() - base) / 1024


def oversized_call(d, path, payload, outcomes):
    def run():
        with d.channel(**{"grpc.max_send_message_length": -1}) as ch:
            outcomes.append(raw_call(ch, path, payload, timeout=300)[:2])
    return run


def test_oversized_messages_are_refused_within_bounded_memory():
    """A request far over --max-message-bytes is refused (RESOURCE_EXHAUSTED)
    without the daemon buffering it: its memory rises by at most the
    receive buffer (64 MiB here), for one 256 MiB message or four of 64 MiB
    at once, and comes back down once the calls stop (the allocator's free
    pages are handed back)."""
    outcomes = []
    with Daemon("--max-message-bytes", "1M", "--max-receive-buffer", "64M",
                env=steady_memory_env()) as d:
        before = d.rss_kb()
        one = peak_rss_rise_mb(d, [oversized_call(d, SCORE, bytes(256 << 20), outcomes)])
        four = peak_rss_rise_mb(d, [oversized_call(d, SCORE, bytes(64 << 20), outcomes)
                                    for _ in range(4)])
        # The freed buffers go back to the system once the calls stop.
        deadline = time.monotonic() + 20
        while d.rss_kb() > before + (24 << 10) and time.monotonic() < deadline:
            time.sleep(0.2)
        after = (d.rss_kb() - before) / 1024
    assert [code for code, _ in outcomes] == ["RESOURCE_EXHAUSTED"] * 5, outcomes
    assert one < 64 + 48 and four < 64 + 48, (one, four)
    assert after < 24, after


def test_a_message_that_decodes_huge_is_refused():
    """8 MiB of empty items (4 million structs once decoded) is refused with
    message_too_large when its decoding passes 64 MiB, instead of growing
    the daemon by ~370 MB."""
    outcomes = []
    with Daemon("--max-message-bytes", "8M", env=steady_memory_env()) as d:
        rise = peak_rss_rise_mb(d, [oversized_call(d, SCORE, b"\x12\x00" * (4 << 20), outcomes)])
    code, info = outcomes[0]
    assert (code, info and info.reason) == ("RESOURCE_EXHAUSTED", "message_too_large"), outcomes
    assert rise < 64 + 3 * 8 + 32, rise


def cancellation_storm(d, n):
    """n scoring calls cancelled right after they start and n with a 1 ms
    deadline; returns the status codes the clients saw."""
    codes = []
    with d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        futures = []
        for i in range(n):
            f = stub.Score.future(score_request(20), timeout=60)
            f.cancel()
            futures.append(f)
            futures.append(stub.ScoreStream(score_request(20), timeout=0.001))
        for f in futures:
            try:
                f.result() if hasattr(f, "result") and not hasattr(f, "__next__") else list(f)
                codes.append("OK")
            except grpc.RpcError as e:
                info = error_info(e)
                codes.append(e.code().name + (f" {info.reason}" if info else ""))
            except grpc.FutureCancelledError:
                codes.append("CANCELLED")
    return codes


def test_a_cancellation_storm_leaves_nothing_behind(daemon):
    """Hundreds of calls cancelled at once or given a 1 ms deadline: each
    ends (a few may find the queue full first), the work stops, and no call
    or job stays counted."""
    codes = cancellation_storm(daemon, 200)
    assert set(codes) <= {"OK", "CANCELLED", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED queue_full"}, \
        collections.Counter(codes)
    st = daemon.wait_idle()
    assert st.in_flight_calls == 0 and st.in_flight_jobs == 0
    with daemon.channel() as ch:
        assert score_pb2_grpc.ScoreServiceStub(ch).Score(score_request(2), timeout=60).items


def built_with_sanitizers():
    cache = os.path.join(os.environ["LMSCORE_BUILD_DIR"], "CMakeCache.txt")
    with open(cache) as f:
        return "LMSCORE_SANITIZE:BOOL=ON" in f.read()


def test_rss_returns_after_a_burst():
    """After a burst of load, a cancellation storm and many connections, the
    daemon's RSS comes back to within 10% of its level after warm-up once
    the burst's connections are gone (closed by the client, or by the
    daemon after --max-connection-idle). A sanitizer build runs on ASan's
    allocator instead of glibc's, which keeps pages that hold any live
    block (98 MB after warm-up, 115 MB after the burst, where glibc's
    comes back to +4%): there the bound is 25%, which a daemon keeping what
    the burst took (+30%) still fails."""
    bound = 1.25 if built_with_sanitizers() else 1.1
    with Daemon("--workers", "2", "--max-connection-idle", "2s", env=steady_memory_env()) as d:
        def load(seconds, n):
            stop = time.monotonic() + seconds

            def client(seed):
                rnd = random.Random(seed)
                with d.channel() as ch:
                    stub = score_pb2_grpc.ScoreServiceStub(ch)
                    while time.monotonic() < stop:
                        one_scoring_call(stub, rnd)
            threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)

        load(3, 8)
        time.sleep(3)
        warm = d.rss_kb()
        load(4, 16)
        cancellation_storm(d, 100)
        channels = [d.channel(**{"grpc.use_local_subchannel_pool": 1}) for _ in range(300)]
        for ch in channels:
            d.stub(ch).GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=60)
        for ch in channels:
            ch.close()
        load(2, 16)
        burst = d.rss_kb()
        deadline = time.monotonic() + 20
        while d.rss_kb() > bound * warm and time.monotonic() < deadline:
            time.sleep(0.2)
        after = d.rss_kb()
    assert after <= bound * warm, (warm // 1024, burst // 1024, after // 1024)


def items_header(query):
    return score_pb2.ScoreItemsRequest(header=score_pb2.ScoreItemsHeader(query=query,
                                                                         label_token_ids=[5]))


BIG_TEXT = "hello world " * (5_000_000 // 12)  # 5 MB: inside the 16 MiB message limit

LONG_TEXT_CASES = {
    "ScoreItems query": (lambda s: list(s.ScoreItems(iter([items_header(text(BIG_TEXT))]),
                                                     timeout=60)), "query"),
    "ScoreItems batch item": (lambda s: list(s.ScoreItems(iter([
        items_header(text("Q?")),
        score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(items=[text(" a"), text(BIG_TEXT)]))]),
        timeout=60)), "items[1]"),
    "Score query": (lambda s: s.Score(score_pb2.ScoreRequest(
        query=text(BIG_TEXT), items=[text(" a")], label_texts=[" yes"]), timeout=60), "query"),
    "ScoreStream item": (lambda s: list(s.ScoreStream(score_pb2.ScoreRequest(
        query=text("Q?"), items=[text(BIG_TEXT)], label_texts=[" yes"]), timeout=60)), "items[0]"),
    "Score label text": (lambda s: s.Score(score_pb2.ScoreRequest(
        query=text("Q?"), items=[text(" a")], label_texts=[BIG_TEXT]), timeout=60),
        "label_texts[0]"),
    "Tokenize": (lambda s: s.Tokenize(score_pb2.TokenizeRequest(text=BIG_TEXT), timeout=60),
                 "text"),
}


def test_long_texts_are_refused_before_they_are_tokenized():
    """A 5 MB text (inside the message limit) in any place of any RPC is
    refused with text_too_long naming it, at once and without the memory
    that tokenizing and scoring it would take: the ScoreItems query was once
    tokenized and prefilled (RSS +2.8 GB, the worker held past the call's
    deadline and the drain). Texts at the limit still score."""
    with Daemon("--max-text-bytes", "64K", env=steady_memory_env()) as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        outcomes = {}
        sampler = RssSampler(d, period=0.01)
        base = d.rss_kb()
        for case, (call, field) in LONG_TEXT_CASES.items():
            t0 = time.monotonic()
            try:
                call(stub)
                outcomes[case] = ("OK",)
            except grpc.RpcError as e:
                info = error_info(e)
                outcomes[case] = (e.code().name, info and info.reason, info and
                                  info.metadata["field"], time.monotonic() - t0 < 5)
        sampler.stop()
        rise_mb = (sampler.max_kb() - base) / 1024
        at_limit = stub.Tokenize(score_pb2.TokenizeRequest(text="a" * (64 << 10)), timeout=60)
        assert d.stats().in_flight_jobs == 0
    assert outcomes == {case: ("INVALID_ARGUMENT", "text_too_long", field, True)
                        for case, (_, field) in LONG_TEXT_CASES.items()}, outcomes
    assert len(at_limit.token_ids) > 0
    # each 5 MB message is decoded once (plus gRPC's copy of it)
    assert rise_mb < 64, rise_mb


def test_a_score_items_query_is_held_to_the_sequence_limit():
    """The ScoreItems header's query alone must fit in --max-sequence-tokens
    (it has no item yet to measure the sequence through): one token over is
    sequence_too_long naming the query, at once, as is a 100 KB text query
    (16,667 tokens) under the default text limit; a query at the limit
    scores."""
    with Daemon("--max-sequence-tokens", "256") as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        for query in (tokens(list(range(1000, 1257))), text("hello world " * 8400)):
            t0 = time.monotonic()
            with pytest.raises(grpc.RpcError) as e:
                list(stub.ScoreItems(iter([items_header(query)]), timeout=60))
            assert time.monotonic() - t0 < 5
            info = error_info(e.value)
            assert (e.value.code(), info and info.reason, info and info.metadata["field"]) == \
                (grpc.StatusCode.INVALID_ARGUMENT, "sequence_too_long", "query"), e.value
        out = list(stub.ScoreItems(iter([items_header(tokens(list(range(1000, 1256))))]),
                                   timeout=60))
        assert out[-1].summary.item_count == 0


def test_a_dead_call_stops_its_query_prefill():
    """A ScoreItems header whose client is gone (here its deadline passed)
    stops its query's prefill at the next layer, freeing the worker: a
    Tokenize queued behind it answers well before the prefill would have
    ended (the model has 3 layers; it once ran to its end, and a 100 KB
    query held the worker past its deadline)."""
    n = 4000
    with Daemon("--workers", "1") as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        t0 = time.monotonic()
        list(stub.ScoreItems(iter([items_header(tokens(list(range(2000, 2000 + n))))]),
                             timeout=300))
        whole = time.monotonic() - t0
        t0 = time.monotonic()
        dead = stub.ScoreItems(iter([items_header(tokens(list(range(9000, 9000 + n))))]),
                               timeout=whole / 6)
        d.wait_jobs(1)
        stub.Tokenize(score_pb2.TokenizeRequest(text="after"), timeout=300)
        freed = time.monotonic() - t0
        with pytest.raises(grpc.RpcError) as e:
            list(dead)
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        d.wait_idle()
    assert freed < 0.75 * whole, (freed, whole)


def test_signals_other_than_stop_signals_do_not_end_the_daemon():
    """SIGHUP, SIGUSR2 and the other signals whose default action ends a
    process are ignored with a log record naming them (they once killed the
    daemon at once: exit 129, 140, ..., no drain), SIGUSR1 logs the state,
    the daemon keeps serving through all of them, and SIGQUIT drains like
    SIGTERM."""
    ignored = [signal.SIGHUP, signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF,
               signal.SIGXCPU, signal.SIGXFSZ, signal.SIGIO, signal.SIGPWR, signal.SIGRTMIN + 3]
    d = Daemon()
    try:
        with d.channel() as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            for sig in ignored:
                name = "SIGRTMIN+3" if sig == signal.SIGRTMIN + 3 else signal.Signals(sig).name
                d.proc.send_signal(sig)
                d.wait_for_log(rf'msg="signal ignored" signal={re.escape(name)}\b', 30)
                assert stub.Score(score_request(2), timeout=60).items, name
            d.proc.send_signal(signal.SIGUSR1)
            state = d.wait_for_log(r'msg="state" phase=serving', 30)
            assert "admitted_calls=0" in state and "workers=1" in state, state
            assert stub.Score(score_request(2), timeout=60).items
        d.proc.send_signal(signal.SIGQUIT)
        d.wait_for_log(r'msg="signal received: draining" signal=SIGQUIT', 30)
        d.stop_clean()
    finally:
        d.stop(signal.SIGKILL)


def test_a_model_that_is_not_a_file_is_refused_at_once(tmp_path):
    """A FIFO given as the model (or as a Hugging Face directory's
    config.json) is refused at once with exit status 1 and a reason,
    instead of a daemon waiting for a writer forever, deaf to SIGTERM."""
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    hf = tmp_path / "hf"
    src = os.path.join(os.environ["LMSCORE_BUILD_DIR"], "models", "tiny-qwen3-hf")
    hf.mkdir()
    for name in os.listdir(src):
        if name != "config.json":
            os.symlink(os.path.join(src, name), hf / name)
    os.mkfifo(hf / "config.json")
    for model, what in ((fifo, "not a regular file (a GGUF model) or a directory"),
                        (hf, "config.json: not a regular file")):
        d = Daemon(model=str(model), wait_serving=False)
        try:
            assert d.proc.wait(30) == 1, d.log()
            assert what in d.log(), d.log()
        finally:
            d.stop(signal.SIGKILL)


@pytest.mark.parametrize("hook", ["LMSCORE_TEST_STALL_WORKER_MS", "LMSCORE_TEST_LOAD_STUCK_MS"])
def test_sigterm_ends_the_daemon_whatever_runs(hook):
    """Work that never polls (an engine worker stalled for a minute, or a
    model load that blocks) does not hold the process past --drain-timeout
    plus 2 s: it is left behind with an error record and exit status 1.
    The call in flight still ends UNAVAILABLE (draining)."""
    loading = hook == "LMSCORE_TEST_LOAD_STUCK_MS"
    d = Daemon("--drain-timeout", "500ms", binary=LMSCORED_TEST_HOOKS, env={hook: "60000"},
               wait_serving=not loading)
    try:
        call = None
        if loading:
            time.sleep(0.5)
        else:
            ch = d.channel()
            call = score_pb2_grpc.ScoreServiceStub(ch).Score.future(score_request(2), timeout=120)
            d.wait_jobs(1)
        t0 = time.monotonic()
        d.proc.send_signal(signal.SIGTERM)
        rc = d.proc.wait(30)
        took = time.monotonic() - t0
        d.wait_for_log(r'msg="did not stop in time: exiting without it"', 10)
        assert rc == 1 and took < 0.5 + 2 + 1.5, (rc, took, d.log())
        assert ("model load" if loading else "engine worker") in d.log()
        if call:
            with pytest.raises(grpc.RpcError) as e:
                call.result()
            assert error_info(e.value) and error_info(e.value).reason == "draining", e.value
            ch.close()
    finally:
        d.stop(signal.SIGKILL)


def test_a_stream_that_is_not_read_holds_no_worker():
    """A ScoreStream whose client never reads (1,000 items of 200 labels with
    log-probs: far more than the HTTP/2 window holds) parks between chunks
    instead of holding the only worker: another client's Score calls
    meanwhile wait at most about one chunk of work (64 items, timed here as
    a Score of 64 such items), where they once timed out until the stream's
    own deadline. Its cancel frees it."""
    labels = list(range(1000, 1200))

    def request(n):
        return score_pb2.ScoreRequest(query=tokens([1, 2, 3, 4]), items=[tokens([5, 6, 7])] * n,
                                      label_token_ids=labels, return_logprobs=True)
    with Daemon("--workers", "1") as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        t0 = time.monotonic()
        stub.Score(request(64), timeout=300)
        chunk_s = time.monotonic() - t0
        # no BDP probing: the window stays at 64 KB, which one chunk fills
        slow_ch = d.channel(**{"grpc.http2.bdp_probe": 0, "grpc.use_local_subchannel_pool": 1})
        unread = score_pb2_grpc.ScoreServiceStub(slow_ch).ScoreStream(request(1000), timeout=600)
        d.wait_jobs(1)
        latencies, end = [], time.monotonic() + max(8, 4 * chunk_s)
        while time.monotonic() < end:
            t0 = time.monotonic()
            stub.Score(score_request(3), timeout=120)
            latencies.append(time.monotonic() - t0)
        busy = d.stats()
        unread.cancel()
        slow_ch.close()
        d.wait_idle()
    assert busy.in_flight_calls == 1, busy
    assert max(latencies) < 2 * chunk_s + 1.0, (max(latencies), chunk_s, len(latencies))
