"""The HTTP API's front door (service/transport/http_listener.c under
http_server.c) against slow and idle clients: a slow-body attack and an
idle-connection attack each leave a normal client served at once, on a
fixed number of threads; the request line and headers have a deadline, a
body a minimum rate after a grace, an idle keep-alive connection the header
deadline, and one address a limit of its own whose oldest reader makes room
for a new connection.
"""
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import threading
import time

from harness import Daemon, Http, http_error, raw_connect, read_until_close, start_long_score

SCORE = b'{"query": [1], "items": [[2]], "label_token_ids": [3]}'
SLOW_HEAD = (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 100000\r\n\r\n{")


def threads(d):
    return len(os.listdir("/proc/%d/task" % d.proc.pid))


def attack(port, sources, per_source, first, then, stop, interval):
    """per_source connections from each address that send first on
    connecting, then `then` every interval (nothing when empty), and
    reconnect at the next tick when the server drops them, until stop."""
    socks = {(src, i): None for src in sources for i in range(per_source)}
    while not stop.is_set():
        for key, s in socks.items():
            try:
                if s is None:
                    socks[key] = raw_connect(port, first, source=key[0], timeout=2)
                elif then:
                    s.sendall(then)
            except OSError:
                if s is not None:
                    s.close()
                socks[key] = None
        stop.wait(interval)
    for s in socks.values():
        if s is not None:
            s.close()


def served_during(d, api, run_attack, seconds=12):
    """The normal client's latencies (a new connection and one score each
    0.25 s, from 127.0.0.1; None for one not answered 200 within 10 s)
    while run_attack runs, and the daemon's most threads meanwhile."""
    stop = threading.Event()
    t = threading.Thread(target=run_attack, args=(stop,))
    t.start()
    latencies, most_threads = [], 0
    try:
        time.sleep(2)  # the attack's connections are in
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.monotonic()
            try:
                status, _, _ = api.score(SCORE, timeout=10)
            except OSError:
                status = None
            latencies.append(time.monotonic() - t0 if status == 200 else None)
            most_threads = max(most_threads, threads(d))
            time.sleep(0.25)
    finally:
        stop.set()
        t.join()
    served = [t for t in latencies if t is not None]
    print("%d of %d served, latency median %.1f ms, max %.1f ms; threads %d" % (
        len(served), len(latencies), 1000 * statistics.median(served or [0]),
        1000 * max(served or [0]), most_threads))
    return latencies, most_threads


def test_slow_bodies_leave_the_api_served():
    """256 connections from eight addresses (32 each, the default limit
    256 in all) each announce a 100,000-byte body and send a byte every
    2 s, reconnecting when dropped (they once held every connection
    libmicrohttpd allowed, a thread each, each byte restarting a 60 s
    idle timeout: no other client was served). A normal client from another
    address is served every time within 3 s (each new connection pushes the
    oldest slow one out), and the daemon's threads do not grow with the
    connections."""
    with Daemon("--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0") as d:
        api = Http(d)
        api.score(SCORE)
        before = threads(d)
        sources = ["127.0.0.%d" % (10 + i) for i in range(8)]
        latencies, most = served_during(
            d, api, lambda stop: attack(api.port, sources, 32, SLOW_HEAD, b" ", stop, 2.0))
        assert None not in latencies and max(latencies) < 3, latencies
        assert most <= before + 2, (before, most)


def test_idle_connections_leave_the_api_served():
    """300 connections from the normal client's own address that send
    nothing, reconnecting when dropped (they once closed the API for 61 s):
    the address's limit (64) and the header deadline keep them from the
    others' room, and the normal client's new connection pushes the oldest
    idle one out: served every time within 3 s, threads flat."""
    with Daemon("--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0") as d:
        api = Http(d)
        api.score(SCORE)
        before = threads(d)
        latencies, most = served_during(
            d, api, lambda stop: attack(api.port, ["127.0.0.1"], 300, b"", b"", stop, 1.0))
        assert None not in latencies and max(latencies) < 3, latencies
        assert most <= before + 2, (before, most)


def closed_after(s, send=b"", every=0.2, limit=8):
    """Seconds until the server closes s (with no answer), sending `send`
    every `every` s meanwhile; fails past limit."""
    t0 = time.monotonic()
    s.settimeout(every)
    while time.monotonic() - t0 < limit:
        try:
            data = s.recv(65536)
            assert data == b"", data
            return time.monotonic() - t0
        except TimeoutError:
            pass
        except ConnectionResetError:
            return time.monotonic() - t0
        try:
            if send:
                s.sendall(send)
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - t0
    raise AssertionError("the connection was still open after %s s" % limit)


def test_deadlines():
    """With --http-header-timeout 1s and --http-body-min-rate 1K: headers
    that trickle in (a line every 0.2 s, each byte once restarting a 60 s
    idle timeout) are cut at 1 s; a body that trickles (a byte every
    0.2 s) at 1 s plus what it sent at 1 KB/s; a keep-alive connection idle
    after its answer at 1 s; a body at 4 KB/s that takes 3 s is read and
    answered."""
    with Daemon("--http-listen", "127.0.0.1:0", "--http-header-timeout", "1s",
                "--http-body-min-rate", "1K") as d:
        api = Http(d)
        s = raw_connect(api.port, b"POST /v1/score HTTP/1.1\r\nHost: x\r\n")
        t = closed_after(s, b"X-Slow: 1\r\n")
        s.close()
        assert 0.9 <= t < 3, t

        s = raw_connect(api.port, SLOW_HEAD)
        t = closed_after(s, b" ")
        s.close()
        assert 0.9 <= t < 3, t

        conn = api.connection(timeout=10)
        status, _, got = api.score(SCORE, conn=conn)
        assert status == 200, got
        t = closed_after(conn.sock)
        conn.close()
        assert 0.9 <= t < 3, t

        body = SCORE[:-1] + b" " * (12000 - len(SCORE)) + b"}"
        s = raw_connect(api.port, b"POST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                  b"Content-Length: %d\r\n\r\n" % len(body))
        t0 = time.monotonic()
        for i in range(0, len(body), 400):
            s.sendall(body[i:i + 400])
            time.sleep(0.1)
        assert time.monotonic() - t0 > 2.5
        data = read_until_close(s)
        s.close()
        assert data.startswith(b"HTTP/1.1 200 "), data


def test_a_slow_reader_is_cut_at_the_answer_deadline():
    """An answer must be taken within --http-header-timeout of being ready:
    a client that asks for large answers (1,000 pipelined GET /openapi.json,
    33 MB) and reads none has its connection closed once the socket buffers
    are full and the answer waiting has had its second, not held open for
    ever; the answer cut off is logged as such (CANCELLED, its status
    decided named)."""
    with Daemon("--http-listen", "127.0.0.1:0", "--http-header-timeout", "1s",
                "--log-level", "debug") as d:
        api = Http(d)
        request = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n"
        with raw_connect(api.port, request.replace(b"\r\n\r\n",
                                                   b"\r\nConnection: close\r\n\r\n")) as s:
            one = len(read_until_close(s))
        n = 1000
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", api.port))
        s.sendall(request * n)
        time.sleep(4)  # the buffers fill at once; the deadline is 1 s after
        s.settimeout(10)  # a connection still open fails here (TimeoutError)
        got = read_until_close(s)
        s.close()
        assert got.startswith(b"HTTP/1.1 200 ") and len(got) < n * one // 2, (len(got), n * one)
        d.wait_for_log(r"call finished.*/openapi.json.*CANCELLED", 10)


def server_send_queue(port, client):
    """The bytes the daemon's socket for client (listening on port) holds
    unsent or unacknowledged, from /proc/net/tcp (tx_queue)."""
    local = "0100007F:%04X" % port
    remote = "0100007F:%04X" % client.getsockname()[1]
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                return int(fields[4].split(":")[0], 16)
    return None


def test_clients_that_never_read_their_answers_make_room():
    """Clients that pipeline large answers (200 GET /openapi.json, 6.6 MB)
    and read none: each leaves at most 128 KiB of answers unsent in the
    daemon's socket (then its answer waits, stalled), and with every slot
    held by them (--http-max-connections 2) a new client is served: the
    one whose answers have waited longest is closed for it, before any
    reader."""
    with Daemon("--http-listen", "127.0.0.1:0", "--http-max-connections", "2") as d:
        api = Http(d)
        request = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n"
        stuck = []
        for _ in range(2):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", api.port))
            s.sendall(request * 200)
            stuck.append(s)
            time.sleep(0.5)  # its answers fill what the sockets take
        try:
            for s in stuck:
                queued = server_send_queue(api.port, s)
                assert queued is not None and queued < 512 << 10, queued
            with raw_connect(api.port, b"GET /health HTTP/1.1\r\nHost: x\r\n"
                                       b"Connection: close\r\n\r\n", timeout=10) as probe:
                got = read_until_close(probe)
            assert got.startswith(b"HTTP/1.1 200 "), got
            stuck[0].settimeout(10)
            got = read_until_close(stuck[0])  # the answers it took, then the close
            assert got.count(b"HTTP/1.1 200 ") < 200, len(got)
            # the other was not touched: read now, every answer comes
            stuck[1].settimeout(10)
            got = b""
            while got.count(b"HTTP/1.1 200 ") < 200:
                chunk = stuck[1].recv(1 << 20)
                assert chunk, got.count(b"HTTP/1.1 200 ")
                got += chunk
        finally:
            for s in stuck:
                s.close()


def still_open(s):
    """Nothing comes on s within 0.5 s, not even its close."""
    s.settimeout(0.5)
    try:
        return s.recv(1) == b"never"
    except TimeoutError:
        return True


def test_one_address_has_a_limit_of_its_own():
    """--http-max-connections-per-peer 4: a fifth idle connection from
    127.0.0.2 closes that address's oldest, and a client from 127.0.0.1
    is not touched by either."""
    with Daemon("--http-listen", "127.0.0.1:0", "--http-max-connections-per-peer", "4") as d:
        api = Http(d)
        other = raw_connect(api.port)
        idle = [raw_connect(api.port, source="127.0.0.2") for _ in range(4)]
        time.sleep(0.5)
        idle.append(raw_connect(api.port, source="127.0.0.2"))
        idle[0].settimeout(3)
        assert read_until_close(idle[0]) == b""
        for s in idle[1:] + [other]:
            assert still_open(s)
        other.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(SCORE), SCORE))
        other.settimeout(10)
        head, _, body = read_until_close(other).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 "), head
        assert json.loads(body)["scores"], body
        for s in idle + [other]:
            s.close()


def test_with_no_connection_to_push_out_a_client_gets_503_as_json():
    """--http-max-connections 1 held by a call the engine is running (not a
    reader, so not pushed out): a new connection is answered 503
    too_many_connections as JSON, Retry-After and Connection: close, and
    the running call is not disturbed."""
    with Daemon("--http-listen", "127.0.0.1:0", "--http-max-connections", "1",
                "--max-items", "100000") as d:
        api = Http(d)
        s = start_long_score(api.port)
        d.wait_jobs(1)
        # the answer comes on accept, before any request is read
        refused = raw_connect(api.port, timeout=10)
        head, _, got = read_until_close(refused).partition(b"\r\n\r\n")
        refused.close()
        assert head.startswith(b"HTTP/1.1 503 "), head
        assert b"Connection: close" in head and b"Retry-After: 1" in head, head
        assert http_error(json.loads(got)) == ("too_many_connections", None), got
        # the waiting call was not touched: its client hanging up cancels it
        assert still_open(s)
        s.close()
        d.wait_idle(timeout=60)


def test_a_refused_client_reads_its_503_not_a_reset():
    """The 503 of a connection past the limits closes in stages (RFC 9112
    9.6): the write side shut, what the client still sends read and
    dropped until it closes. A client that sends its request and a 64 KiB
    body before it reads gets the 503 every time, never a reset (closed at
    once with the request unread, the connection was reset)."""
    with Daemon("--http-listen", "127.0.0.1:0", "--http-max-connections", "1",
                "--max-items", "100000") as d:
        api = Http(d)
        s = start_long_score(api.port, items=30000)
        d.wait_jobs(1)
        body = b"{" + b" " * (64 << 10) + b"}"
        request = (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                   % (len(body), body))
        outcomes = []
        for _ in range(20):
            try:
                with raw_connect(api.port, request, timeout=10) as r:
                    time.sleep(0.05)  # the 503 and the close are in before it reads
                    got = b""
                    while chunk := r.recv(65536):
                        got += chunk
                outcomes.append(got.split(b"\r\n")[0])
            except OSError as e:
                outcomes.append(type(e).__name__)
        assert outcomes == [b"HTTP/1.1 503 Service Unavailable"] * 20, outcomes
        assert still_open(s)  # the running call was not touched
        s.close()
        d.wait_idle(timeout=60)


def test_tls_is_served(tmp_path):
    """With --tls-cert the HTTP API speaks TLS through the acceptor and the
    suspended connections: a score that waits for the engine is answered,
    twice on one kept-alive connection, and a plaintext client gets no
    answer."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    context = ssl.create_default_context(cafile=str(cert))
    context.check_hostname = False
    with Daemon("--http-listen", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key",
                str(key), wait_serving=False) as d:
        d.wait_for_log(r'msg"?[=:]"?serving', 180)  # gRPC's health check would need TLS
        api = Http(d, context=context)
        body = {"query": [1, 2, 3], "label_token_ids": [6, 7],
                "items": [[1000 + i, 7, 8, 9] for i in range(40)]}
        conn = api.connection(timeout=60)
        for _ in range(2):
            status, _, got = api.score(body, conn=conn)
            assert status == 200 and len(got["scores"]) == 40, got
        conn.close()
        s = raw_connect(api.port, b"POST /v1/score HTTP/1.1\r\nHost: x\r\n"
                                  b"Content-Length: %d\r\n\r\n%s" % (len(SCORE), SCORE),
                        timeout=10)
        assert not read_until_close(s).startswith(b"HTTP/1.1 200")
        s.close()


def keep_alive_client(port, name, stop, results):
    """Sends scores one after the other on a kept-alive connection, each
    with its own x-request-id, opening a new connection when the server
    closes one, until stop or the server is gone. results gets (request id,
    HTTP status or None when no answer came)."""
    s, n = None, 0
    while not stop.is_set():
        rid = "%s-%d" % (name, n)
        n += 1
        try:
            if s is None:
                s = raw_connect(port, timeout=20)
            s.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nx-request-id: %s\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (rid.encode(), len(SCORE), SCORE))
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    raise ConnectionResetError("closed")
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
            while len(body) < int(fields[b"Content-Length"]):
                chunk = s.recv(65536)
                if not chunk:
                    raise ConnectionResetError("closed in the body")
                body += chunk
            assert fields[b"x-request-id"] == rid.encode(), (rid, head)
            results.append((rid, int(head.split()[1])))
            if fields.get(b"Connection") == b"close":
                s.close()
                s = None
        except ConnectionRefusedError:
            results.append((rid, None))
            break
        except OSError:
            results.append((rid, None))
            if s is not None:
                s.close()
            s = None
    if s is not None:
        s.close()


def test_the_drain_logs_only_answers_sent():
    """Keep-alive clients send request after request while the daemon
    drains and stops (SIGTERM): a request is answered, or never read. Every
    request the log records as finished with a status was answered with
    it; a request that got no answer is logged as CANCELLED or not at all
    (one logged as answered once got nothing)."""
    d = Daemon("--http-listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug")
    try:
        api = Http(d)
        stop, results = threading.Event(), []
        clients = [threading.Thread(target=keep_alive_client,
                                    args=(api.port, "c%d" % i, stop, results)) for i in range(6)]
        for c in clients:
            c.start()
        time.sleep(1.5)
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(60) == 0
        stop.set()
        for c in clients:
            c.join()
    finally:
        stop.set()
        d.stop(signal.SIGKILL)
    assert "Sanitizer" not in d.log() and "runtime error" not in d.log()
    answered = dict(results)
    logged = {}
    for line in d.log().splitlines():
        record = json.loads(line)
        if record.get("msg") == "call finished" and record.get("request_id") in answered:
            logged[record["request_id"]] = record["code"]
    http_of = {"OK": 200, "UNAVAILABLE": 503}
    assert 200 in answered.values() and 503 in answered.values(), results
    wrong = {rid: (code, answered[rid]) for rid, code in logged.items()
             if code != "CANCELLED" and answered[rid] != http_of.get(code)}
    assert not wrong, wrong
