"""test_sandbox.py — lmscored runs under the restrictions lmscored.service
(and the Kubernetes securityContext) put on it. It writes no file (so
ProtectSystem=strict and readOnlyRootFilesystem cost nothing), and it runs
under MemoryDenyWriteExecute= (the kernel's PR_SET_MDWE, which systemd
uses where it exists) and SystemCallFilter=@system-service ~@privileged with
SystemCallErrorNumber=EPERM (the same allow-list, expanded by systemd-analyze,
loaded as a seccomp filter). The daemon must load the demo model (its
tokenizer compiles PCRE2 patterns, whose JIT needs W+X pages and must fall
back), serve text and streamed requests, and drain cleanly on SIGTERM."""

import ctypes
import errno
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients"))
from daemon import Daemon, cli_path  # noqa: E402

import seccomp  # noqa: E402  (python3-seccomp)

from test_systemd_unit import unit_settings  # noqa: E402
from conftest import read  # noqa: E402

PR_SET_MDWE = 65
PR_MDWE_REFUSE_EXEC_GAIN = 1


def syscall_group(name, seen=None):
    """The syscalls of a systemd group, nested groups expanded."""
    seen = set() if seen is None else seen
    out = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True,
                         text=True, check=True).stdout
    calls = set()
    for line in out.splitlines()[1:]:
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        if word.startswith("@"):
            if word not in seen:
                seen.add(word)
                calls |= syscall_group(word, seen)
        else:
            calls.add(word)
    return calls


@pytest.fixture(scope="module")
def allowed_syscalls(source_dir):
    """What the unit's SystemCallFilter= lines leave allowed."""
    service = unit_settings(read(os.path.join(source_dir, "packaging", "lmscored.service")))
    filters = service["Service"]["SystemCallFilter"]
    allowed = set()
    for entry in filters:
        deny = entry.startswith("~")
        names = entry.lstrip("~").split()
        calls = set().union(*(syscall_group(n) if n.startswith("@") else {n} for n in names))
        allowed = allowed - calls if deny else allowed | calls
    assert "execve" in allowed and "mount" not in allowed
    return allowed


def sandbox(allowed):
    """preexec_fn: MDWE, then the seccomp allow-list (EPERM for the rest)."""
    def enter():
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
            os._exit(100 + ctypes.get_errno())
        f = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
        for name in allowed:
            try:
                f.add_rule(seccomp.ALLOW, name)
            except (RuntimeError, ValueError):
                pass  # not a syscall of this architecture
        f.load()
    return enter


def test_mdwe_is_enforced_here():
    """The restriction is real: a process under MDWE cannot map W+X memory."""
    code = ("import ctypes, mmap, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            f"assert libc.prctl({PR_SET_MDWE}, {PR_MDWE_REFUSE_EXEC_GAIN}, 0, 0, 0) == 0\n"
            "try:\n"
            "    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
            "except PermissionError:\n"
            "    sys.exit(0)\n"
            "sys.exit(1)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if "AssertionError" in result.stderr:
        pytest.skip("this kernel has no PR_SET_MDWE (Linux < 6.3)")
    assert result.returncode == 0, result.stderr


# LeakSanitizer stops the world with ptrace at exit, which neither a tracer
# nor the syscall filter allows; the other suites check this daemon for leaks.
_ASAN = os.environ.get("ASAN_OPTIONS", "")
NO_LEAK_CHECK = {"ASAN_OPTIONS": (_ASAN + ":" if _ASAN else "") + "detect_leaks=0"}
WRITE_CALLS = "creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,truncate," \
              "link,linkat,symlink,symlinkat"


def exercise(d):
    """A text Score (the tokenizer's regexes) and a 200-item stream."""
    score = subprocess.run([cli_path(), "score", "--target", d.target, "--query",
                            "Is this sandboxed?", "--item", " yes", "--item", " no",
                            "--label", " yes", "--json"],
                           capture_output=True, text=True, timeout=300)
    assert score.returncode == 0, score.stderr
    stream = subprocess.run([cli_path(), "stream", "--target", d.target, "--query", "Pick:",
                             "--label-id", "9454"], input="".join(f"x{i}\n" for i in range(200)),
                            capture_output=True, text=True, timeout=300)
    assert stream.returncode == 0, stream.stderr
    assert len(stream.stdout.splitlines()) == 200


def test_daemon_serves_inside_the_unit_sandbox(allowed_syscalls):
    d = Daemon(model="tiny-qwen3.gguf", preexec_fn=sandbox(allowed_syscalls),
               flags=["--workers", "2"], env=NO_LEAK_CHECK)
    try:
        exercise(d)
    finally:
        log = d.stop()
    assert not re.search(r"Operation not permitted|EPERM", log), log


def test_daemon_writes_no_file(tmp_path):
    trace = tmp_path / "syscalls"
    d = Daemon(model="tiny-qwen3.gguf", env=NO_LEAK_CHECK,
               wrapper=["strace", "-f", "-qq", "-o", str(trace),
                        "-e", f"trace=open,openat,openat2,{WRITE_CALLS}"])
    try:
        exercise(d)
    finally:
        d.stop()
    calls = trace.read_text().splitlines()
    assert any("tiny-qwen3.gguf" in c for c in calls), "the trace saw no model being opened"
    writes = [c for c in calls if "= -1 " not in c and
              (re.search(r"O_WRONLY|O_RDWR|O_CREAT", c) or
               re.search(rf"\b({WRITE_CALLS.replace(',', '|')})\(", c))]
    allowed = re.compile(r'"/dev/(null|tty|urandom|random)"')
    assert [c for c in writes if not allowed.search(c)] == []
