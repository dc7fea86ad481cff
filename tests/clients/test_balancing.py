"""test_balancing.py — client-side load balancing as docs/deployment.md
prescribes it for the headless Service: with --round-robin (CLI) or
round_robin=True (Python) a target resolving to two daemons gets calls on
both; without it (gRPC's pick_first) all calls go to one. The target lists
both loopback addresses (ipv4:A,B), as DNS would for a headless Service."""

import json
import subprocess

import pytest

import lmscore
from daemon import Daemon, cli_path

CALLS = 20


@pytest.fixture(scope="module")
def pair():
    daemons = [Daemon(), Daemon()]
    yield daemons
    for d in daemons:
        d.stop()


def requests_served(daemon):
    out = subprocess.run([cli_path(), "info", "--json", "--target", daemon.target],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)["stats"]["requests_total"]


def spread(pair, send):
    before = [requests_served(d) for d in pair]
    send(f"ipv4:127.0.0.1:{pair[0].port},127.0.0.1:{pair[1].port}")
    # each info call itself counts once
    return [requests_served(d) - b - 1 for d, b in zip(pair, before)]


def test_cli_round_robin_uses_every_address(pair):
    # One bench run keeps one channel, so its calls show the rotation.
    def send(target):
        subprocess.run([cli_path(), "bench", "--target", target, "--round-robin",
                        "--duration", "2", "--warmup", "0", "--items", "1",
                        "--concurrency", "2"], check=True, capture_output=True, timeout=120)
    counts = spread(pair, send)
    # Both get calls (round_robin only uses a backend once it has connected,
    # so the first calls of a run may all go to the quicker one).
    assert min(counts) > 0, counts


def test_cli_without_round_robin_uses_one_address(pair):
    def send(target):
        for _ in range(CALLS):
            subprocess.run([cli_path(), "tokenize", "--target", target, "hello"], check=True,
                           capture_output=True, timeout=60)
    counts = spread(pair, send)
    assert sorted(counts) == [0, CALLS], counts


def test_python_round_robin(pair):
    def send(target):
        with lmscore.Client(target, round_robin=True) as c:
            for _ in range(CALLS):
                c.tokenize("hello")
    counts = spread(pair, send)
    assert sum(counts) == CALLS and min(counts) >= CALLS // 4, counts
