"""The daemon under hostile or careless clients: what a client sees when it
sends garbage, oversized or invalid messages, cancels in storms or holds
connections open, and what every call gets when SIGTERM comes under load.
Each test replays one class of an adversarial run; docs/operations.md
states the guarantees they check.
"""
import datetime
import re
import signal

from harness import Daemon
from lmscore.v1 import score_pb2


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

