"""systemd notify protocol: the test owns the NOTIFY_SOCKET datagram socket and
reads what lmscored says: READY=1 only after the model is loaded, STATUS=
lines, WATCHDOG=1 every half WATCHDOG_USEC, STOPPING=1 on SIGTERM with every
in-flight call answered; with a stalled worker (test hook) the pings stop.
"""
import socket
import statistics
import threading
import time

from harness import Daemon, LMSCORED_TEST_HOOKS, tokens
from lmscore.v1 import score_pb2, score_pb2_grpc

WATCHDOG_S = 2.0


class NotifySocket:
    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []  # (monotonic time, line)
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            now = time.monotonic()
            with self.lock:
                for line in data.decode().splitlines():
                    self.messages.append((now, line))

    def lines(self):
        with self.lock:
            return list(self.messages)

    def times(self, line):
        return [t for t, l in self.lines() if l == line]

    def wait_for(self, line, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, l in self.lines():
                if l == line:
                    return t
            time.sleep(0.02)
        raise AssertionError(f"no {line!r} in {self.lines()}")

    def close(self):
        self.sock.close()


def start(tmp_path, env):
    """lmscored-test-hooks under a shell that exports WATCHDOG_PID=$$ and execs
    the daemon, so the watchdog variables name the daemon's own pid, as
    systemd's do."""
    notify = NotifySocket(str(tmp_path / "notify.sock"))
    wrapper = tmp_path / "under-systemd.sh"
    wrapper.write_text(f'#!/bin/sh\nexport WATCHDOG_PID=$$\nexec "{LMSCORED_TEST_HOOKS}" "$@"\n')
    wrapper.chmod(0o755)
    full_env = {"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": str(int(WATCHDOG_S * 1e6))}
    full_env.update(env)
    d = Daemon("--drain-timeout", "120s", binary=str(wrapper), env=full_env, wait_serving=False)
    return d, notify


def request(n_items):
    return score_pb2.ScoreRequest(query=tokens([1, 2, 3]),
                                  items=[tokens([100 + i, 7, 8]) for i in range(n_items)],
                                  label_token_ids=[6, 9], algorithm=score_pb2.ALGORITHM_SERIAL)


def test_ready_status_watchdog_stopping(tmp_path):
    # The model load is slowed by 2 s, so READY=1 early would be seen; each
    # job first stalls 6 s, so the calls are surely in flight at SIGTERM.
    d, notify = start(tmp_path, {"LMSCORE_TEST_LOAD_DELAY_MS": "2000",
                                 "LMSCORE_TEST_STALL_WORKER_MS": "6000"})
    try:
        loaded = d.wait_for_log("model loaded", 180)
        ready_at = notify.wait_for("READY=1", 60)
        before_ready = [l for t, l in notify.lines() if t < ready_at]
        assert "STATUS=loading the model" in before_ready
        assert not any(l == "WATCHDOG=1" for l in before_ready)
        assert "model loaded" in loaded
        d.wait_serving()
        assert any(l.startswith("STATUS=serving") for _, l in notify.lines())

        time.sleep(4 * WATCHDOG_S)
        pings = [t for t in notify.times("WATCHDOG=1") if t >= ready_at]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        assert len(gaps) >= 4, notify.lines()
        assert max(gaps) < WATCHDOG_S, gaps  # never late enough for systemd to act
        assert 0.45 * WATCHDOG_S <= statistics.median(gaps) <= 0.8 * WATCHDOG_S, gaps

        with d.channel() as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            calls = [stub.Score.future(request(20), timeout=600) for _ in range(4)]
            deadline = time.monotonic() + 60
            # jobs, not calls: a call counts from its accept, before its request
            # has been read, and a request read after SIGTERM is refused
            while d.stats().in_flight_jobs < 4:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            d.proc.send_signal(15)
            stopping_at = notify.wait_for("STOPPING=1", 60)
            assert stopping_at > ready_at
            for c in calls:
                assert len(c.result().items) == 20  # every in-flight call answered
    finally:
        d.stop_clean()
        notify.close()


def test_stalled_worker_stops_the_pings(tmp_path):
    stall_s = 3 * WATCHDOG_S
    d, notify = start(tmp_path, {"LMSCORE_TEST_STALL_WORKER_MS": str(int(stall_s * 1000))})
    try:
        notify.wait_for("READY=1", 180)
        d.wait_serving()
        with d.channel() as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            t0 = time.monotonic()
            assert stub.Score(request(1), timeout=600).items  # its worker stalls first
            t1 = time.monotonic()
        time.sleep(2 * WATCHDOG_S)
        pings = notify.times("WATCHDOG=1")
        during = [t for t in pings if t0 + WATCHDOG_S + 1.0 < t < t1 - 0.5]
        assert during == [], (t0, t1, pings)
        assert any(t > t1 for t in pings), "the pings did not resume after the stall"
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        assert max(gaps) > WATCHDOG_S, gaps  # systemd would have restarted us
        d.wait_for_log("withholding the watchdog ping", 10)
    finally:
        d.stop_clean()
        notify.close()
