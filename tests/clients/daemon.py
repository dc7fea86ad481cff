"""daemon.py — a real lmscored for end-to-end tests: started on 127.0.0.1
with port 0 (the port is read from its "listening" log line), ready once
`lmscore health --wait` says SERVING, stopped with SIGTERM; stop() fails the
test when the daemon did not exit 0 or a sanitizer reported anything."""

import os
import re
import signal
import subprocess
import tempfile
import time

START_TIMEOUT_S = 300
STOP_TIMEOUT_S = 60
# The whole line, newline included: the log is read while the daemon writes
# it, and a half-written "port=4" once sent a client to the wrong port.
LISTENING = re.compile(r'msg="listening"[^\n]*\bport=(\d+)[^\n]*\n')
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:")


def build_dir():
    path = os.environ.get("LMSCORE_BUILD_DIR")
    if not path:
        raise RuntimeError("LMSCORE_BUILD_DIR is not set: run the suite through ctest")
    return path


def cli_path():
    return os.path.join(build_dir(), "clients", "c", "lmscore")


def model_path(name):
    path = os.path.join(build_dir(), "models", name)
    if not os.path.exists(path):
        raise RuntimeError(f"{path} is missing: build the `models` target first")
    return path


class Daemon:
    def __init__(self, model="tiny-llama.gguf", flags=(), env=None, preexec_fn=None,
                 ready_args=(), wrapper=()):
        """ready_args: extra `lmscore health` flags to reach it (e.g. --ca-cert);
        wrapper: a command the daemon runs under (e.g. strace -f -o FILE)."""
        self.log = tempfile.NamedTemporaryFile(prefix="lmscored-", suffix=".log", delete=False)
        clean_env = {k: v for k, v in os.environ.items() if not k.startswith("LMSCORE_")}
        clean_env.update(env or {})
        argv = [*wrapper, os.path.join(build_dir(), "service", "lmscored"), "--model",
                model_path(model), "--listen", "127.0.0.1:0", *flags]
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=clean_env, preexec_fn=preexec_fn)
        self.port = self._wait_for_port()
        self.pid = self._daemon_pid() if wrapper else self.proc.pid
        self.target = f"127.0.0.1:{self.port}"
        self._wait_until_serving(ready_args)

    def log_text(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def _wait_for_port(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            match = LISTENING.search(self.log_text())
            if match:
                return int(match.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"lmscored exited with {self.proc.returncode}:\n{self.log_text()}")
            time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError(f"lmscored did not say where it listens:\n{self.log_text()}")

    def _daemon_pid(self):
        """The wrapper's child: the daemon itself, which SIGTERM must reach."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            (child,) = f.read().split()
        return int(child)

    def _wait_until_serving(self, ready_args):
        result = subprocess.run([cli_path(), "health", "--target", self.target,
                                 "--wait", str(START_TIMEOUT_S), *ready_args],
                                capture_output=True, text=True, timeout=START_TIMEOUT_S + 30)
        if result.returncode != 0:
            self.proc.kill()
            raise RuntimeError(f"lmscored never became SERVING: {result.stderr}\n{self.log_text()}")

    def stop(self):
        """SIGTERM (a graceful drain); returns the log. Raises AssertionError
        when the daemon crashed, hung or a sanitizer complained."""
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"lmscored ignored SIGTERM:\n{self.log_text()}")
        log = self.log_text()
        os.unlink(self.log.name)
        assert not SANITIZER_REPORT.search(log), f"sanitizer report from lmscored:\n{log}"
        assert self.proc.returncode == 0, f"lmscored exited with {self.proc.returncode}:\n{log}"
        return log
