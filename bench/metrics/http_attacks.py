"""http_attacks.py — the HTTP API's front door under three attacks, as a
normal client sees it: from 127.0.0.1, every 0.25 s, a new connection and
one POST /v1/score (10 s timeout) while the attack runs from 127.0.0.2.

  huge_bodies  4 connections announce a 16,777,215-byte body and send
               20 KB/s each, reconnecting when dropped (the defaults:
               --max-receive-buffer 64M, --max-message-bytes 16M)
  never_read   32 connections pipeline 200 GET /openapi.json (33 KB each)
               through a 4 KiB receive buffer and read nothing, reconnecting
               when dropped (--http-max-connections 16)
  refusals     --http-max-connections 1 held by a long score: each probe,
               refused, has sent its request with a 64 KiB body before it
               reads (the 503 read, or a reset)

Prints the probes' outcomes (200, 503, reset, timeout) and the median and
slowest latency of those answered as they should be (200; 503 for
refusals).

  LMSCORE_BUILD_DIR=build PYTHONPATH=build/clients/python:tests/service \\
    python3 bench/metrics/http_attacks.py ATTACK SECONDS [LMSCORED]

(the Python client under build/ when it was built with the tests, else a
test tree's; LMSCORED: another daemon binary, to compare two builds on the
same model)
"""
import collections
import json
import socket
import statistics
import struct
import sys
import threading
import time

from harness import LMSCORED, Daemon, Http, raw_connect, start_long_score

SCORE = json.dumps({"query": [1], "items": [[2]], "label_token_ids": [3]}).encode()
PROBE = (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
         b"Content-Length: %d\r\n\r\n%s" % (len(SCORE), SCORE))
REFUSED_BODY = b"{" + b" " * (64 << 10) + b"}"
REFUSED_PROBE = (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(REFUSED_BODY), REFUSED_BODY))
TCP_ESTABLISHED = 1


def established(s):
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    return struct.unpack("B", info[:1])[0] == TCP_ESTABLISHED


def probe(port, data, pause=0.0):
    """(outcome, seconds): the status line's code, 'reset' or 'timeout'."""
    t0 = time.monotonic()
    try:
        with raw_connect(port, data, timeout=10) as s:
            time.sleep(pause)
            got = b""
            while chunk := s.recv(65536):
                got += chunk
    except TimeoutError:
        return "timeout", None
    except OSError:
        return "reset", None
    if not got:
        return "closed", None
    return got.split(b" ", 2)[1].decode(), time.monotonic() - t0


def huge_bodies(port, stop):
    head = (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 16777215\r\n\r\n")
    socks = [None] * 4
    while not stop.is_set():
        for i, s in enumerate(socks):
            try:
                if s is None:
                    socks[i] = raw_connect(port, head, source="127.0.0.2", timeout=2)
                else:
                    s.sendall(b" " * 2000)  # 20 KB/s at 10 ticks a second
            except OSError:
                if s is not None:
                    s.close()
                socks[i] = None
        stop.wait(0.1)
    for s in socks:
        if s is not None:
            s.close()


def never_read(port, stop):
    request = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 200
    socks = [None] * 32
    while not stop.is_set():
        for i, s in enumerate(socks):
            if s is not None and not established(s):
                s.close()
                s = socks[i] = None
            if s is None:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.bind(("127.0.0.2", 0))
                s.settimeout(2)
                try:
                    s.connect(("127.0.0.1", port))
                    s.sendall(request)
                    socks[i] = s
                except OSError:
                    s.close()
        stop.wait(0.1)
    for s in socks:
        if s is not None:
            s.close()


def main(attack, seconds, binary=LMSCORED):
    flags = {"huge_bodies": (), "never_read": ("--http-max-connections", "16"),
             "refusals": ("--http-max-connections", "1", "--max-items", "1000000")}[attack]
    with Daemon("--http-listen", "127.0.0.1:0", *flags, binary=binary) as d:
        port = Http(d).port
        stop = threading.Event()
        held = None
        if attack == "refusals":
            held = start_long_score(port, items=200000)
            d.wait_jobs(1)
            t = None
        else:
            t = threading.Thread(target=globals()[attack], args=(port, stop))
            t.start()
            time.sleep(2)  # the attack in place
        outcomes, latencies = collections.Counter(), []
        wanted = "503" if attack == "refusals" else "200"
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                if attack == "refusals":
                    outcome, took = probe(port, REFUSED_PROBE, pause=0.05)
                else:
                    outcome, took = probe(port, PROBE)
                outcomes[outcome] += 1
                if outcome == wanted:
                    latencies.append(took)
                time.sleep(0.25)
        finally:
            stop.set()
            if t:
                t.join()
            if held:
                held.close()
        n = sum(outcomes.values())
        said = ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
        timing = (f"; {wanted} in median {statistics.median(latencies) * 1000:.0f} ms, slowest "
                  f"{max(latencies) * 1000:.0f} ms" if latencies else "")
        print(f"{attack}, {seconds:g} s, {binary}: {n} probes ({said}){timing}")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), *sys.argv[3:4])
