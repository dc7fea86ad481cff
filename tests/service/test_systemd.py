"""systemd notify protocol: the test owns the NOTIFY_SOCKET datagram socket and
reads what lmscored says: READY=1 only after the model is loaded, STATUS=
lines, WATCHDOG=1 every half WATCHDOG_USEC, STOPPING=1 on SIGTERM with every
in-flight call answered; with a stalled worker (test hook) the pings stop;
SIGTERM during the model load stops the load and the daemon.

Logs under systemd: libsystemd sends journal records to the fixed path
/run/systemd/journal/socket, so the daemon runs in a private mount namespace
(unshare -rm) where that directory is the test's own and the socket in it is
the test's; JOURNAL_STREAM names the daemon's stderr, as systemd sets it.
"""
import os
import signal
import socket
import statistics
import subprocess
import threading
import time

import grpc
import pytest

from harness import Daemon, LMSCORED, LMSCORED_TEST_HOOKS, MODEL, START_TIMEOUT, tokens
from lmscore.v1 import score_pb2, score_pb2_grpc

WATCHDOG_S = 2.0


class DatagramSocket:
    """A unix datagram socket bound at path, read on a thread: parse(data,
    ancillary) turns each datagram into the entries appended to items."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.items = []
        self.cv = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(1 << 16, socket.CMSG_SPACE(4))
            except OSError:
                return
            if not data:
                return  # close() shut the socket down
            entries = self.parse(data, anc)
            with self.cv:
                self.items.extend(entries)
                self.cv.notify_all()

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(10)
        self.sock.close()


class NotifySocket(DatagramSocket):
    """Stands in for systemd's NOTIFY_SOCKET: items are (monotonic time, line)."""

    def parse(self, data, anc):
        now = time.monotonic()
        return [(now, line) for line in data.decode().splitlines()]

    def lines(self):
        with self.cv:
            return list(self.items)

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
            # jobs: a call whose request is read after SIGTERM is refused, so
            # the four are surely admitted once their jobs are queued
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


def test_sigterm_while_loading_stops_the_load(tmp_path):
    # The load would take 10 minutes; SIGTERM ends it at its next poll.
    d, notify = start(tmp_path, {"LMSCORE_TEST_LOAD_DELAY_MS": "600000"})
    try:
        notify.wait_for("STATUS=loading the model", 60)
        t0 = time.monotonic()
        d.stop_clean()
        assert time.monotonic() - t0 < 30
        assert "signal received while loading the model" in d.log()
        lines = [l for _, l in notify.lines()]
        assert "STOPPING=1" in lines and "READY=1" not in lines, lines
    finally:
        d.stop(signal.SIGKILL)
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


def journal_fields(data):
    """The fields of one native-protocol journal datagram: KEY=value lines, or
    KEY, a little-endian 64-bit size and the value for binary values."""
    fields, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            key, value = line.split(b"=", 1)
            i = nl + 1
        else:
            size = int.from_bytes(data[nl + 1:nl + 9], "little")
            key, value = line, data[nl + 9:nl + 9 + size]
            i = nl + 9 + size + 1
        fields[key.decode()] = value.decode()
    return fields


class JournalSocket(DatagramSocket):
    """Stands in for journald: the socket DIR/socket; items are records, each
    a dict of its fields (a record too big for a datagram comes as a memfd)."""

    def __init__(self, directory):
        directory.mkdir()
        self.dir = directory
        super().__init__(str(directory / "socket"))

    def parse(self, data, anc):
        for level, kind, fd_bytes in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fd = int.from_bytes(fd_bytes[:4], "little")
                data = os.pread(fd, os.fstat(fd).st_size, 0)
                os.close(fd)
        return [journal_fields(data)]

    def wait_for(self, timeout, **match):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for r in self.items:
                    if all(r.get(k) == v for k, v in match.items()):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no record with {match} in {self.items}")
                self.cv.wait(left)


def can_unshare():
    return subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /run"],
                          capture_output=True).returncode == 0


needs_unshare = pytest.mark.skipif(not can_unshare(),
                                   reason="no private mount namespace (unshare -rm) to give "
                                          "lmscored the test's journal socket")


def under_journal(tmp_path, journal_dir, stream_is_stderr, *args):
    """lmscored with /run/systemd/journal bound to journal_dir and stderr a
    file, which JOURNAL_STREAM names (or, when not stream_is_stderr, names
    another file: what a child whose stderr was redirected sees)."""
    err = open(tmp_path / "stderr", "w")
    st = os.fstat(err.fileno()) if stream_is_stderr else os.stat(tmp_path)
    env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    script = ('mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal && '
              'mount --bind "$0" /run/systemd/journal && exec "$@"')
    proc = subprocess.Popen(["unshare", "-rm", "sh", "-c", script, str(journal_dir), LMSCORED,
                             "--model", MODEL, "--listen", "127.0.0.1:0", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                            env=env)
    err.close()
    return proc


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.platform
@needs_unshare
def test_logs_go_to_the_journal_under_systemd(tmp_path):
    journal = JournalSocket(tmp_path / "journal")
    proc = under_journal(tmp_path, journal.dir, True, "--log-level", "debug")
    try:
        listening = journal.wait_for(START_TIMEOUT, MESSAGE="listening")
        # every record: the message, its syslog priority, the identifier, and
        # the record's fields as upper-case journal fields
        assert listening["PRIORITY"] == "6"
        assert listening["SYSLOG_IDENTIFIER"] == "lmscored"
        assert listening["ADDRESS"] == "127.0.0.1:0" and listening["TLS"] == "off"
        journal.wait_for(START_TIMEOUT, MESSAGE="serving")
        with grpc.insecure_channel(f"127.0.0.1:{int(listening['PORT'])}") as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
            assert stub.Score(request(2), timeout=120, metadata=[
                ("x-request-id", "journal-1"),
                ("traceparent", f"00-{trace_id}-00f067aa0ba902b7-01")]).items
        done = journal.wait_for(60, MESSAGE="call finished",
                                METHOD="/lmscore.v1.ScoreService/Score")
        assert done["PRIORITY"] == "7" and done["CODE"] == "OK" and float(done["MS"]) > 0
        scored = journal.wait_for(60, MESSAGE="scored")
        assert scored["ITEMS"] == "2" and scored["ALGORITHM"] == "serial"
        for record in (done, scored):
            assert record["REQUEST_ID"] == "journal-1" and record["TRACE_ID"] == trace_id
        assert stop(proc) == 0
        journal.wait_for(10, MESSAGE="stopped")
        assert (tmp_path / "stderr").read_text() == ""  # nothing went to stderr
    finally:
        if proc.poll() is None:
            stop(proc)
        journal.close()


@pytest.mark.platform
@needs_unshare
@pytest.mark.parametrize("case", ["stderr_redirected", "journald_gone"])
def test_logs_stay_on_stderr_without_the_journal(tmp_path, case):
    # JOURNAL_STREAM naming another file than stderr, or a journal socket
    # nobody listens on any more (sending is refused): the records go to
    # stderr as logfmt. (With no socket file at all libsystemd drops records
    # without an error, by design; that case is not tested.)
    journal_dir = tmp_path / "journal"
    if case == "journald_gone":
        journal_dir.mkdir()
        gone = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        gone.bind(str(journal_dir / "socket"))
        gone.close()  # the socket file stays, and sending to it is refused
        journal = None
    else:
        journal = JournalSocket(journal_dir)
    proc = under_journal(tmp_path, journal_dir, case == "journald_gone")
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while 'msg="serving"' not in (tmp_path / "stderr").read_text():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        assert stop(proc) == 0
        log = (tmp_path / "stderr").read_text()
        assert 'level=info msg="listening" address=127.0.0.1:0 port=' in log
        assert 'msg="stopped"' in log
        if journal:
            assert journal.items == []
    finally:
        if proc.poll() is None:
            stop(proc)
        if journal:
            journal.close()
