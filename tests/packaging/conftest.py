"""conftest.py — where the packaging tests find things: the source tree, the
build tree (LMSCORE_BUILD_DIR, with the built binaries and models), the pinned
npm tools (LMSCORE_NPM_TOOLS, installed by install_npm_tools.sh), the
daemon's own list of LMSCORE_* variables and the metrics it exports (one
scrape of a real lmscored after a gRPC Score call and an HTTP score and
rerank)."""

import collections
import json
import os
import re
import signal
import subprocess
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

SOURCE_DIR = os.environ.get(
    "LMSCORE_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _required_env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this suite through ctest (tests/packaging/CMakeLists.txt)")
    return value


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR


@pytest.fixture(scope="session")
def build_dir():
    return _required_env("LMSCORE_BUILD_DIR")


@pytest.fixture(scope="session")
def npm_tools():
    path = _required_env("LMSCORE_NPM_TOOLS")
    if not os.path.isdir(os.path.join(path, "node_modules")):
        pytest.fail(f"{path} holds no npm install: the packaging.npm_tools fixture did not run")
    return path


@pytest.fixture(scope="session")
def daemon_env_names(build_dir):
    """The LMSCORE_* variables lmscored documents in its --help."""
    exe = os.path.join(build_dir, "service", "lmscored")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    names = set(re.findall(r"\bLMSCORE_[A-Z0-9_]+\b", out.stdout + out.stderr))
    assert names, f"lmscored --help names no LMSCORE_* variable:\n{out.stdout}{out.stderr}"
    return names


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


ExportedMetrics = collections.namedtuple("ExportedMetrics", "families labels bucket_bounds series")


@pytest.fixture(scope="session")
def exported_metrics(build_dir, tmp_path_factory):
    """What lmscored's /metrics serves once it has answered one gRPC Score
    call and one HTTP POST /v1/score, /v1/rerank, /v2/rerank and /rerank each: .families (family
    names as the text format writes them, counters with _total), .labels
    (sample name -> the label names it carries), .bucket_bounds (the
    histograms' `le` values) and .series (sample name -> the label dicts of
    its samples)."""
    log_path = tmp_path_factory.mktemp("lmscored") / "log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [os.path.join(build_dir, "service", "lmscored"), "--model",
             os.path.join(build_dir, "models", "tiny-qwen3.gguf"), "--listen", "127.0.0.1:0",
             "--metrics-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"], stdout=log, stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if not k.startswith("LMSCORE_")})
    try:
        ports = {}
        deadline = time.monotonic() + 180
        while len(ports) < 3:
            assert proc.poll() is None and time.monotonic() < deadline, read(log_path)
            ports = dict(re.findall(
                r'msg="(metrics listening|HTTP listening|listening)".*?port=(\d+)',
                read(log_path)))
            time.sleep(0.05)
        cli = os.path.join(build_dir, "clients", "c", "lmscore")
        target = ["--target", "127.0.0.1:" + ports["listening"]]
        subprocess.run([cli, "health", *target, "--wait", "180"], check=True, timeout=240,
                       capture_output=True)
        subprocess.run([cli, "score", *target, "--query", "Is it?", "--item", " yes",
                        "--label", " yes"], check=True, timeout=120, capture_output=True)
        for path, body in (("/v1/score", {"query": [1, 2], "items": [[4]],
                                          "label_token_ids": [6]}),
                           ("/v1/rerank", {"query": "Is it?", "documents": ["yes"]}),
                           ("/v2/rerank", {"query": "Is it?", "documents": ["yes"]}),
                           ("/rerank", {"query": "Is it?", "texts": ["yes"]})):
            req = urllib.request.Request(f"http://127.0.0.1:{ports['HTTP listening']}{path}",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as resp:
                resp.read()
        url = f"http://127.0.0.1:{ports['metrics listening']}/metrics"
        with urllib.request.urlopen(url, timeout=30) as resp:
            body = resp.read().decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    families, labels, bounds = set(), collections.defaultdict(set), set()
    series = collections.defaultdict(list)
    for family in text_string_to_metric_families(body):
        families.add(family.name + ("_total" if family.type == "counter" else ""))
        for sample in family.samples:
            labels[sample.name] |= set(sample.labels)
            series[sample.name].append(dict(sample.labels))
            if "le" in sample.labels:
                bounds.add(sample.labels["le"])
    return ExportedMetrics(families, dict(labels), bounds, dict(series))


HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# a metric lmscored exports, not a recorded one (level:metric:operation)
METRIC = re.compile(r"(?<![:\w])((?:lmscore|process)_[a-z0-9_]+)\b(\{[^}]*\})?")
LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
# what Prometheus adds to every series of a target
TARGET_LABELS = {"job", "instance", "namespace", "pod"}


def unexported_names(expr, exported):
    """What a PromQL expression names that lmscored does not export: metric
    names, and labels their selectors use that the samples do not carry
    (target labels aside). An empty list when all is there; the metric
    names it found are checked to be at least one (AssertionError)."""
    found = METRIC.findall(expr)
    assert found, f"{expr} names no lmscored metric"
    missing = []
    for name, selector in found:
        family = name
        for suffix in HISTOGRAM_SUFFIXES:
            if name.endswith(suffix) and name[:-len(suffix)] in exported.families:
                family = name[:-len(suffix)]
        if family not in exported.families:
            missing.append(name)
            continue
        carried = exported.labels.get(name, set())
        missing += [f"{name} has no label {label}" for label in LABEL.findall(selector)
                    if label not in carried and label not in TARGET_LABELS]
    return missing
