"""test_alerts.py — the alerting rules (packaging/prometheus/lmscore.rules.yml)
and their Kubernetes form (k8s/monitoring/prometheusrule.yaml): promtool
accepts both, its unit tests (tests/packaging/lmscore.rules.test.yml) pass
and would catch a wrong threshold, every alert has a case where it fires and
a line in docs/operations.md, the PrometheusRule is the one
scripts/prometheusrule.sh makes from the rules file, and every metric and
label the rules name is one a real lmscored exports, and that the error and
latency rules select the series a real lmscored exports for its HTTP API as
well as for gRPC."""

import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import read, unexported_names

RULES = os.path.join("packaging", "prometheus", "lmscore.rules.yml")
UNIT_TESTS = os.path.join("tests", "packaging", "lmscore.rules.test.yml")
PROMETHEUS_RULE = os.path.join("k8s", "monitoring", "prometheusrule.yaml")


@pytest.fixture(scope="module")
def promtool():
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is missing: scripts/install-deps.sh --test installs it "
                    "(Debian package prometheus)")
    return path


def promtool_run(promtool, *args, cwd=None):
    return subprocess.run([promtool, *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


@pytest.fixture(scope="module")
def groups(source_dir):
    return yaml.safe_load(read(os.path.join(source_dir, RULES)))["groups"]


def rules(groups, kind):
    return [r for g in groups for r in g["rules"] if kind in r]


def test_promtool_accepts_the_rules_file(promtool, source_dir):
    result = promtool_run(promtool, "check", "rules", os.path.join(source_dir, RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_accepts_the_prometheus_rule(promtool, source_dir, tmp_path):
    spec = yaml.safe_load(read(os.path.join(source_dir, PROMETHEUS_RULE)))["spec"]
    path = tmp_path / "from-prometheusrule.yml"
    path.write_text(yaml.safe_dump(spec))
    result = promtool_run(promtool, "check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_prometheus_rule_is_made_from_the_rules_file(source_dir):
    made = subprocess.run(["sh", os.path.join(source_dir, "scripts", "prometheusrule.sh")],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    assert made == read(os.path.join(source_dir, PROMETHEUS_RULE)), \
        "run: sh scripts/prometheusrule.sh > k8s/monitoring/prometheusrule.yaml"


def test_the_unit_tests_pass(promtool, source_dir):
    result = promtool_run(promtool, "test", "rules", os.path.join(source_dir, UNIT_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_unit_tests_catch_a_wrong_threshold(promtool, source_dir, tmp_path):
    # the same tests against rules whose error-ratio threshold is 10 times
    # too high: the case where that alert fires must fail
    (tmp_path / "packaging" / "prometheus").mkdir(parents=True)
    (tmp_path / "tests" / "packaging").mkdir(parents=True)
    text = read(os.path.join(source_dir, RULES))
    assert text.count("> 0.05") == 1
    (tmp_path / RULES).write_text(text.replace("> 0.05", "> 0.5"))
    shutil.copy(os.path.join(source_dir, UNIT_TESTS), tmp_path / UNIT_TESTS)
    result = promtool_run(promtool, "test", "rules", str(tmp_path / UNIT_TESTS))
    assert result.returncode != 0
    failed = re.findall(r"alertname: (\w+)", result.stdout + result.stderr)
    assert set(failed) == {"LmscoreErrorRatioHigh"}, result.stdout + result.stderr


def test_every_alert_fires_in_a_unit_test(source_dir, groups):
    cases = yaml.safe_load(read(os.path.join(source_dir, UNIT_TESTS)))["tests"]
    fired = {t["alertname"] for case in cases for t in case.get("alert_rule_test", [])
             if t["exp_alerts"]}
    assert {r["alert"] for r in rules(groups, "alert")} <= fired


def test_every_alert_has_severity_and_text(groups):
    for rule in rules(groups, "alert"):
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], \
            rule["alert"]


def test_every_alert_is_documented(source_dir, groups):
    docs = read(os.path.join(source_dir, "docs", "operations.md"))
    for rule in rules(groups, "alert"):
        assert f"`{rule['alert']}`" in docs, rule["alert"]


def test_every_metric_the_rules_name_is_exported(groups, exported_metrics):
    recorded = {r["record"] for r in rules(groups, "record")}
    for rule in rules(groups, "record") + rules(groups, "alert"):
        name = rule.get("alert") or rule.get("record")
        used = set(re.findall(r"\b[a-z_]+:[a-z0-9_]+:[a-z0-9_]+\b", rule["expr"]))
        assert used <= recorded, f"{name} uses series no rule records: {used - recorded}"
        expr = rule["expr"]
        for series in used:
            expr = expr.replace(series, "")
        if not re.search(r"\b(lmscore|process)_", expr):
            continue  # only recorded series, or Prometheus' own `up`
        missing = unexported_names(expr, exported_metrics)
        assert not missing, f"{name}: {missing}"
    for le in re.findall(r'le="([^"]+)"', yaml.safe_dump(groups)):
        assert le in exported_metrics.bucket_bounds, f"le={le} is no bucket bound"


SELECTOR = re.compile(r"\b(lmscore_[a-z0-9_]+)\{([^}]*)\}")
MATCHER = re.compile(r'([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def selects(selector, labels):
    """Whether a PromQL selector's matchers (the text between its braces)
    all hold for a sample's labels."""
    for name, op, want in MATCHER.findall(selector):
        have = labels.get(name, "")
        ok = {"=": have == want, "!=": have != want,
              "=~": re.fullmatch(want, have) is not None,
              "!~": re.fullmatch(want, have) is None}[op]
        if not ok:
            return False
    return True


def selected(expr, name, labels):
    """Whether every selector of `name` in expr, its code and le matchers
    aside, selects a sample with these labels."""
    found = [sel for metric, sel in SELECTOR.findall(expr) if metric == name]
    assert found, f"no {name} in {expr}"
    return all(selects(re.sub(r'(code|le)\s*=~?\s*"[^"]*"', "", sel), labels) for sel in found)


def test_errors_and_latency_rules_see_grpc_and_http(groups, exported_metrics):
    error_rule = next(r for r in rules(groups, "alert") if r["alert"] == "LmscoreErrorRatioHigh")
    slow_rules = [r for r in rules(groups, "record") if r["record"].startswith("job:lmscore_slow")]
    assert len(slow_rules) == 4
    # every ScoreService method and HTTP endpoint (each exports an OK count
    # from the start) counts for the error ratio
    calls = [s for s in exported_metrics.series["lmscore_requests_total"]
             if s["service"] in ("lmscore.v1.ScoreService", "http")]
    assert {s["service"] for s in calls} == {"lmscore.v1.ScoreService", "http"}, calls
    for labels in calls:
        assert selected(error_rule["expr"], "lmscore_requests_total", labels), labels
    # the scoring calls the fixture made, over both protocols, count for
    # the latency objective
    timed = {(s["service"], s["method"])
             for s in exported_metrics.series["lmscore_request_duration_seconds_count"]}
    scoring = {("lmscore.v1.ScoreService", "Score"), ("http", "score"), ("http", "rerank"),
               ("http", "rerank_v2"), ("http", "rerank_tei")}
    assert scoring <= timed, timed
    for rule in slow_rules:
        for name in ("lmscore_request_duration_seconds_bucket",
                     "lmscore_request_duration_seconds_count"):
            for service, method in scoring:
                assert selected(rule["expr"], name, {"service": service, "method": method}), \
                    (rule["record"], name, service, method)
