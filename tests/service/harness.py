"""harness.py — runs the real lmscored for the service tests.

A Daemon is one lmscored process on 127.0.0.1 with a port the kernel picked
(--listen 127.0.0.1:0; the port is read from the "listening" log line), so
suites can run in parallel. stop() sends SIGTERM and checks a clean exit: code
0 and no sanitizer report (the test build runs the daemon under ASan/UBSan
with leak detection).

Paths come from the environment that tests/service/CMakeLists.txt sets:
LMSCORE_BUILD_DIR (lmscored, lmscored-test-hooks, lmscore-local, models/) and
PYTHONPATH (the Python client's package, whose generated stubs the tests use,
and the reflection stubs).
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families as parse_text

from lmscore._pb import error_details_pb2, health_pb2, health_pb2_grpc, status_pb2
from lmscore.v1 import score_pb2, score_pb2_grpc

BUILD = os.environ["LMSCORE_BUILD_DIR"]
LMSCORED = os.path.join(BUILD, "service", "lmscored")
LMSCORED_TEST_HOOKS = os.path.join(BUILD, "service", "lmscored-test-hooks")
LMSCORE_LOCAL = os.path.join(BUILD, "tools", "lmscore-local")
MODEL = os.environ.get("LMSCORE_TEST_MODEL", os.path.join(BUILD, "models", "tiny-qwen3.gguf"))

# Under ASan on two shared cores everything is slow: generous, not infinite.
START_TIMEOUT = 180


DAEMON_SETTINGS = ("LMSCORE_", "NOTIFY_SOCKET", "WATCHDOG_", "LISTEN_", "JOURNAL_STREAM")


class Daemon:
    def __init__(self, *args, env=None, binary=LMSCORED, wait_serving=True, model=MODEL,
                 wrapper=()):
        """wrapper: a command that execs the daemon (its argv follows), e.g.
        taskset."""
        self.args = ["--model", model, "--listen", "127.0.0.1:0", *args]
        # The daemon reads its settings from LMSCORE_* and systemd's hand-over
        # (NOTIFY_SOCKET, WATCHDOG_*, LISTEN_*, JOURNAL_STREAM): it gets only
        # those a test gives, whatever the environment of the run says.
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(DAEMON_SETTINGS)}
        full_env.update(env or {})
        self.lines = []
        self._cv = threading.Condition()
        self.proc = subprocess.Popen([*wrapper, binary, *self.args], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=full_env, text=True, errors="replace")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.returncode = None
        try:
            # text (msg="listening" port=N) or JSON ("msg":"listening","port":"N")
            line = self.wait_for_log(r'"?msg"?[=:]"listening"', START_TIMEOUT)
            self.port = int(re.search(r'"?port"?[=:]"?(\d+)', line).group(1))
            self.target = f"127.0.0.1:{self.port}"
            if wait_serving:
                self.wait_serving()
        except BaseException:
            self.stop(signal.SIGKILL)  # never leave a daemon behind
            raise

    def _read(self):
        for line in self.proc.stderr:
            with self._cv:
                self.lines.append(line.rstrip("\n"))
                self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def log(self):
        with self._cv:
            return "\n".join(self.lines)

    def wait_for_log(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        seen = 0
        with self._cv:
            while True:
                for line in self.lines[seen:]:
                    if rx.search(line):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no log line matching {pattern!r}; log:\n"
                                         + "\n".join(self.lines))
                self._cv.wait(min(left, 0.5))

    def channel(self, **options):
        return grpc.insecure_channel(self.target, options=list(options.items()))

    def stub(self, channel=None):
        return score_pb2_grpc.ScoreServiceStub(channel or self.channel())

    def wait_serving(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        with self.channel() as ch:
            health = health_pb2_grpc.HealthStub(ch)
            while True:
                try:
                    if health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == \
                            health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise AssertionError("lmscored never became SERVING; log:\n" + self.log())
                time.sleep(0.05)

    def stats(self):
        with self.channel() as ch:
            return self.stub(ch).GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=30).stats

    def wait_idle(self, timeout=60):
        """Waits until no scoring call or job is in flight; returns the stats."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.stats()
            if st.in_flight_calls == 0 and st.in_flight_jobs == 0:
                return st
            if time.monotonic() > deadline:
                raise AssertionError(f"still in flight after {timeout}s: {st}")
            time.sleep(0.05)

    def wait_jobs(self, n=1, timeout=60):
        """Waits until at least n jobs are queued or running."""
        deadline = time.monotonic() + timeout
        while self.stats().in_flight_jobs < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"fewer than {n} jobs in flight after {timeout}s")
            time.sleep(0.02)

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def stop(self, sig=signal.SIGTERM, timeout=120):
        if self.returncode is None:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
            try:
                self.returncode = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("lmscored did not stop; log:\n" + self.log())
            self._reader.join(10)
        return self.returncode

    def stop_clean(self):
        """Stops the daemon and asserts a clean exit."""
        rc = self.stop()
        log = self.log()
        assert "Sanitizer" not in log and "runtime error" not in log, log
        assert rc == 0, f"lmscored exited {rc}; log:\n{log}"

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.stop_clean()
        else:
            self.stop(signal.SIGKILL)


class Metrics:
    """One daemon's /metrics endpoint."""

    def __init__(self, daemon):
        line = daemon.wait_for_log(r'msg="metrics listening"', 60)
        port = int(line.rsplit("port=", 1)[1].split()[0])
        self.url = f"http://127.0.0.1:{port}/metrics"

    def get(self, accept=None, method="GET", path="/metrics"):
        req = urllib.request.Request(self.url.replace("/metrics", path), method=method)
        if accept:
            req.add_header("Accept", accept)
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.headers["Content-Type"], resp.read().decode()

    def scrape(self):
        """{(sample name, frozenset of labels): value} of one scrape."""
        _, body = self.get()
        return {(s.name, frozenset(s.labels.items())): s.value
                for family in parse_text(body) for s in family.samples}


class Http:
    """One daemon's HTTP API (--http-listen): post() sends a JSON body (or
    raw bytes) and returns (status, headers, parsed JSON body)."""

    def __init__(self, daemon, context=None):
        line = daemon.wait_for_log(r'"?msg"?[=:]"HTTP listening"', 60)
        self.port = int(re.search(r'"?port"?[=:]"?(\d+)', line).group(1))
        self.context = context  # an ssl.SSLContext for a TLS daemon

    def connection(self, timeout=300):
        if self.context:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=self.context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def post(self, path, body, headers=None, method="POST", conn=None, timeout=300):
        """body: a JSON-able value, or bytes sent as they are."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        own = conn is None
        conn = conn or self.connection(timeout)
        try:
            conn.request(method, path, body=data,
                         headers={"Content-Type": "application/json", **(headers or {})})
            resp = conn.getresponse()
            raw = resp.read()
            return resp.status, resp.headers, json.loads(raw) if raw else None
        finally:
            if own:
                conn.close()

    def score(self, body, **kw):
        return self.post("/v1/score", body, **kw)

    def rerank(self, body, **kw):
        return self.post("/v1/rerank", body, **kw)


def http_error(body):
    """(reason, field) of an HTTP error body (google.rpc.Status as JSON)."""
    details = body["error"].get("details", [])
    if not details:
        return None, None
    (info,) = details
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" and \
        info["domain"] == "lmscore", info
    return info["reason"], info.get("metadata", {}).get("field")


def value(scrape, name, **labels):
    return scrape.get((name, frozenset(labels.items())), 0.0)


def steady_memory_env():
    """Environment for a daemon whose RSS a test measures: under ASan, a
    small quarantine, so RSS shows the daemon's memory rather than the
    sanitizer's pool of freed blocks (256 MB by default) filling up."""
    opts = os.environ.get("ASAN_OPTIONS")
    if opts is None:
        return {}
    return {"ASAN_OPTIONS": opts + ":quarantine_size_mb=4:thread_local_quarantine_size_kb=64"}


class RssSampler:
    """Samples a daemon's RSS every period seconds on a thread."""

    def __init__(self, daemon, period=0.1):
        self.daemon, self.period = daemon, period
        self.samples = []  # (monotonic time, kB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self.daemon.rss_kb()))
            self._stop.wait(self.period)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.samples

    def max_kb(self, since=0.0):
        return max(kb for t, kb in self.samples if t >= since)


class Cgroup:
    """A fresh cgroup with limits, for a daemon started in it (wrapper());
    the test is skipped where this machine will not let it make one (not
    root, no such controller). v1_files go to the v1 hierarchy of
    controller, v2_files to the unified one: {file name: value}."""

    def __init__(self, controller, v1_files, v2_files):
        self.path = None
        name = f"lmscore-test-{os.getpid()}-{controller}"
        for parent, files, v2 in ((f"/sys/fs/cgroup/{controller}", v1_files, False),
                                  ("/sys/fs/cgroup", v2_files, True)):
            if v2 and not os.path.exists(os.path.join(parent, "cgroup.controllers")):
                continue
            path = os.path.join(parent, name)
            try:
                os.mkdir(path)
            except OSError:
                continue
            try:
                for file, content in files.items():
                    with open(os.path.join(path, file), "w") as f:
                        f.write(content)
                self.path = path
                return
            except OSError:
                os.rmdir(path)
        pytest.skip(f"cannot make a cgroup with {controller} limits here "
                    "(not root, or no such controller)")

    def wrapper(self):
        """A Daemon wrapper that starts the daemon in this cgroup."""
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec "$@"', "sh"]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for _ in range(50):  # the daemon's exit leaves the cgroup empty shortly after
            try:
                os.rmdir(self.path)
                break
            except OSError:
                time.sleep(0.1)


def error_info(err):
    """The google.rpc.ErrorInfo of a failed call (None when it has none)."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            assert status.code == err.code().value[0], (status, err.code())
            assert status.message == err.details()
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return info
    return None


def local_score(request, *flags):
    """Scores a request (lmscore-local's JSON form) in-process with the engine;
    flags: more of lmscore-local's, e.g. --precision bf16."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(request, f)
        path = f.name
    try:
        out = subprocess.run([LMSCORE_LOCAL, "--model", MODEL, "--request", path, *flags],
                             capture_output=True, text=True, timeout=600, check=False)
    finally:
        os.unlink(path)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def tokens(ids):
    return score_pb2.Input(token_ids=score_pb2.TokenIds(ids=ids))


def text(s):
    return score_pb2.Input(text=s)


def raw_connect(port, data=b"", source="127.0.0.1", timeout=60):
    """A plain TCP connection to port from source (any 127.0.0.0/8 address:
    a peer of its own), data sent on it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    if data:
        s.sendall(data)
    return s


def start_long_score(port, items=3000):
    """A raw connection whose POST /v1/score keeps the engine busy for a
    while (items scored one by one; the daemon needs --max-items 100000)."""
    body = json.dumps({"query": [1, 2, 3], "label_token_ids": [6, 7],
                       "items": [[1000 + i % 500, 7, 8, 9] for i in range(items)],
                       "algorithm": "ALGORITHM_SERIAL"}).encode()
    return raw_connect(port, b"POST /v1/score HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body) + body)


def read_until_close(s):
    """Every byte s receives until the server closes it (a reset ends it
    too: a server that shuts a socket with unread bytes resets it)."""
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data
