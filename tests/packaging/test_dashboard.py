"""test_dashboard.py — the Grafana dashboard (k8s/grafana/lmscore.json, shipped
by the kustomization's ConfigMap): every panel queries Prometheus, every
metric a query names is one lmscored exports, with the labels its selectors
use, and the panels the operations docs promise are there."""

import json
import os

import pytest

from conftest import read, unexported_names


@pytest.fixture(scope="module")
def dashboard(source_dir):
    return json.loads(read(os.path.join(source_dir, "k8s", "grafana", "lmscore.json")))


def panels(dashboard):
    """Every panel, those inside rows included."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def test_the_kustomization_ships_it(source_dir):
    kustomization = read(os.path.join(source_dir, "k8s", "kustomization.yaml"))
    assert "grafana/lmscore.json" in kustomization and 'grafana_dashboard: "1"' in kustomization


def test_every_panel_queries_prometheus(dashboard):
    assert dashboard["templating"]["list"][0]["type"] == "datasource"
    for panel in panels(dashboard):
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"]), \
            panel["title"]


def test_every_query_names_exported_metrics(dashboard, exported_metrics):
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            missing = unexported_names(target["expr"], exported_metrics)
            assert not missing, f"{panel['title']}: {missing}"


def test_the_promised_panels_are_there(dashboard):
    exprs = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in panels(dashboard)}
    def with_(*words):
        return [t for t, e in exprs.items() if all(w in e for w in words)]
    assert with_("rate(lmscore_items_scored_total"), "throughput"
    for q in ("0.5", "0.99"):
        assert with_(f"histogram_quantile({q}", "lmscore_queue_wait_seconds_bucket",
                     "lmscore_engine_duration_seconds_bucket"), f"quantile {q}, queue and engine"
    assert with_("by (code, reason)", "lmscore_errors_total"), "errors by reason"
    assert with_("lmscore_prefix_cache_hits_total", "lmscore_prefix_cache_misses_total"), \
        "prefix-cache hit ratio"
    assert with_("lmscore_items_scored_total", "/", "lmscore_requests_total"), "items per request"


def test_the_checker_rejects_an_unknown_metric(dashboard, exported_metrics):
    broken = json.loads(json.dumps(dashboard))
    broken["panels"][0]["targets"][0]["expr"] = "rate(lmscore_items_scroed_total[1m])"
    with pytest.raises(AssertionError, match="lmscore_items_scroed_total"):
        test_every_query_names_exported_metrics(broken, exported_metrics)
