"""The daemon under hostile or careless clients: what a client sees when it
sends garbage, oversized or invalid messages, cancels in storms or holds
connections open, and what every call gets when SIGTERM comes under load.
Each test replays one class of an adversarial run; docs/operations.md
states the guarantees they check.
"""
import collections
import datetime
import random
import re
import signal
import socket
import threading
import time

import grpc
import pytest

from harness import Daemon, LMSCORED_TEST_HOOKS, error_info, tokens
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
    """(code, reason) of every scoring call the daemon finished (debug log)."""
    out = collections.Counter()
    for line in d.log().splitlines():
        if 'msg="call finished"' in line and "ScoreService/Score" in line:
            reason = re.search(r"reason=(\S+)", line)
            out[(re.search(r"code=(\S+)", line).group(1), reason and reason.group(1))] += 1
    return out


def test_sigterm_under_load_loses_no_call():
    """Clients that keep calling through a SIGTERM: every call the daemon took
    ends OK or with an ErrorInfo (draining), none is cancelled without
    details, and the client sees exactly the outcomes the daemon sent. A call
    that never reached the daemon fails UNAVAILABLE at the client's transport
    (connection refused or closed), which gRPC clients retry."""
    d = Daemon("--workers", "2", "--queue-depth", "256", "--drain-timeout", "20s",
               "--log-level", "debug")
    results, stop = [], threading.Event()

    def client(seed):
        rnd = random.Random(seed)
        with d.channel() as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            while not stop.is_set():
                r = one_scoring_call(stub, rnd)
                results.append(r)
                if r[1] == "UNAVAILABLE" and r[2] is None:
                    return  # the daemon is gone

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
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
    lost = [r for r in results if r[1] != "OK" and r[2] is None and r[1] != "UNAVAILABLE"]
    assert not lost, lost
    client_side = collections.Counter((r[1], r[2]) for r in results if r[1] == "OK" or r[2])
    server_side = server_outcomes(d)
    assert set(server_side) <= {("OK", None), ("UNAVAILABLE", "draining")}, server_side
    assert client_side[("OK", None)] == server_side[("OK", None)], (client_side, server_side)
    # A call refused in the last milliseconds may meet its closing connection
    # instead of the draining status: UNAVAILABLE either way.
    assert client_side[("UNAVAILABLE", "draining")] <= server_side[("UNAVAILABLE", "draining")]
    # Calls refused while draining do not hold the drain up.
    assert stopped - signalled < 10, d.log()
    assert "drain timeout" not in d.log() and "still running" not in d.log()


def test_calls_past_the_drain_timeout_end_with_details():
    """A call still running when --drain-timeout ends, and an idle reflection
    stream, end UNAVAILABLE (draining) with an ErrorInfo, not cancelled."""
    d = Daemon("--drain-timeout", "300ms", "--workers", "1", binary=LMSCORED_TEST_HOOKS,
               env={"LMSCORE_TEST_STALL_WORKER_MS": "2000"})
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
    """GetModelInfo right after a call's OK shows no call and no job of it in
    flight: the counters drop before the status is sent."""
    with Daemon() as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        calls = [lambda: stub.Score(score_request(2), timeout=60),
                 lambda: list(stub.ScoreStream(score_request(2), timeout=60)),
                 lambda: list(stub.ScoreItems(items_requests(1), timeout=60)),
                 lambda: stub.Tokenize(score_pb2.TokenizeRequest(text="a b"), timeout=60)]
        busy = []
        for i in range(200):
            calls[i % len(calls)]()
            st = stub.GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=60).stats
            if st.in_flight_calls or st.in_flight_jobs:
                busy.append((i % len(calls), st.in_flight_calls, st.in_flight_jobs))
        assert not busy, busy


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
