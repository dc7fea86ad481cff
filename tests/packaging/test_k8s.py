"""test_k8s.py — the kustomize tree under k8s/: rendered (the kustomization's
resources and images, the same as `kubectl kustomize` where kubectl is
installed), validated against the Kubernetes API schemas (npm
kubernetes-models), and held to the deployment's policies: gRPC probes on the
served port, the HTTP API's port on the Service, non-root read-only pods without capabilities, resources set,
selectors that match, an HPA (on an exported metric, with CPU as fallback)
that alone sets the replica count, pods spread over nodes, a PDB, a
NetworkPolicy admitting only gRPC and HTTP from the namespace and metrics from the
monitoring namespace, a PodMonitor on the metrics port and a PrometheusRule,
both carrying labels set in their kustomization, flags from the ConfigMap."""

import copy
import glob
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import read

GRPC_PORT = 50051
METRICS_PORT = 9464
HTTP_PORT = 8080
CONFIG = "lmscored-config"


def load_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def apply_images(doc, images):
    """kustomize's images transformer: rewrite container images by name."""
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        name = container["image"].split("@")[0].rsplit(":", 1)[0]
        for image in images:
            if image["name"] == name:
                new = image.get("newName", name)
                container["image"] = new + (":" + image["newTag"] if "newTag" in image else "")
    return doc


def generate_config_map(k8s_dir, generator):
    """kustomize's configMapGenerator for files, without the name hash."""
    unsupported = set(generator) - {"name", "files", "options"}
    assert not unsupported, f"generate_config_map() knows no {unsupported}"
    options = generator.get("options", {})
    assert options.get("disableNameSuffixHash") is True, "the name hash is not emulated"
    data = {}
    for path in generator["files"]:
        data[os.path.basename(path)] = read(os.path.join(k8s_dir, path))
    metadata = {"name": generator["name"]}
    if options.get("labels"):
        metadata["labels"] = dict(options["labels"])
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def apply_labels(doc, labels):
    """kustomize's labels transformer, for entries that touch only
    metadata.labels (includeSelectors and includeTemplates false)."""
    for entry in labels:
        unsupported = {k for k, v in entry.items() if k != "pairs" and v}
        assert not unsupported, f"apply_labels() knows no {unsupported}"
        doc.setdefault("metadata", {}).setdefault("labels", {}).update(entry["pairs"])
    return doc


def render(k8s_dir):
    """The objects `kubectl kustomize k8s_dir` makes: its resources (files,
    and directories with a kustomization of their own), generated
    ConfigMaps, images and labels."""
    kustomization = load_docs(os.path.join(k8s_dir, "kustomization.yaml"))[0]
    unsupported = set(kustomization) - {"apiVersion", "kind", "resources", "images",
                                        "configMapGenerator", "labels"}
    assert not unsupported, f"render() knows no {unsupported}: extend it or compare with kubectl"
    docs = []
    for resource in kustomization["resources"]:
        path = os.path.join(k8s_dir, resource)
        docs += render(path) if os.path.isdir(path) else load_docs(path)
    docs += [generate_config_map(k8s_dir, g) for g in kustomization.get("configMapGenerator", [])]
    docs = [apply_labels(d, kustomization.get("labels", [])) for d in docs]
    return [apply_images(d, kustomization.get("images", [])) for d in docs]


@pytest.fixture(scope="module")
def k8s_dir(source_dir):
    return os.path.join(source_dir, "k8s")


@pytest.fixture(scope="module")
def docs(k8s_dir):
    return render(k8s_dir)


def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def deployment(docs):
    return one(docs, "Deployment")


@pytest.fixture(scope="module")
def container(deployment):
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    return c


def test_kustomization_lists_every_manifest(k8s_dir):
    for kustomization_file in glob.glob(os.path.join(k8s_dir, "**", "kustomization.yaml"),
                                        recursive=True):
        here = os.path.dirname(kustomization_file)
        kustomization = load_docs(kustomization_file)[0]
        entries = {os.path.basename(p) for p in glob.glob(os.path.join(here, "*.yaml"))}
        entries |= {os.path.basename(os.path.dirname(p))
                    for p in glob.glob(os.path.join(here, "*", "kustomization.yaml"))}
        assert set(kustomization["resources"]) == entries - {"kustomization.yaml"}, here


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_render_matches_kubectl_kustomize(k8s_dir, docs):
    out = subprocess.run(["kubectl", "kustomize", k8s_dir], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    key = lambda d: (d["kind"], d["metadata"]["name"])
    assert sorted(yaml.safe_load_all(out), key=key) == sorted(docs, key=key)


def validate(npm_tools, source_dir, docs, path):
    """Runs validate_k8s.mjs on docs; the CompletedProcess."""
    path.write_text(yaml.safe_dump_all(docs))
    # ESM imports resolve next to the script: run it from the install.
    script = os.path.join(npm_tools, "validate_k8s.mjs")
    shutil.copy(os.path.join(source_dir, "tests", "packaging", "validate_k8s.mjs"), script)
    return subprocess.run(["node", script, str(path)], capture_output=True, text=True,
                          timeout=120)


def test_manifests_validate_against_the_kubernetes_schemas(npm_tools, source_dir, docs, tmp_path):
    result = validate(npm_tools, source_dir, docs, tmp_path / "rendered.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok ") == len(docs), result.stdout


def test_the_validator_rejects_a_wrong_type(npm_tools, source_dir, docs, tmp_path):
    broken = [dict(d) for d in docs]
    dep = next(d for d in broken if d["kind"] == "Deployment")
    dep["spec"] = dict(dep["spec"], replicas="two")
    result = validate(npm_tools, source_dir, broken, tmp_path / "broken.yaml")
    assert result.returncode == 1 and "FAIL Deployment/lmscored" in result.stdout, result.stdout


@pytest.mark.parametrize("probe", ["startupProbe", "readinessProbe", "livenessProbe"])
def test_probes_use_grpc_health_on_the_served_port(container, probe):
    assert container[probe]["grpc"]["port"] == GRPC_PORT
    assert set(container[probe]) & {"httpGet", "tcpSocket", "exec"} == set()


def test_container_serves_the_grpc_port(container):
    assert {"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"} in container["ports"]


def test_container_serves_the_metrics_port(docs, container):
    assert {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"} \
        in container["ports"]
    listen = one(docs, "ConfigMap", CONFIG)["data"]["LMSCORE_METRICS_LISTEN"]
    assert listen == f"0.0.0.0:{METRICS_PORT}"


def test_the_service_exposes_the_http_api(docs, container):
    assert {"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"} in container["ports"]
    listen = one(docs, "ConfigMap", CONFIG)["data"]["LMSCORE_HTTP_LISTEN"]
    assert listen == f"0.0.0.0:{HTTP_PORT}"
    service = one(docs, "Service", "lmscored")
    assert {"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP",
            "appProtocol": "http"} in service["spec"]["ports"]


def test_podmonitor_scrapes_the_metrics_port(docs, deployment):
    spec = one(docs, "PodMonitor")["spec"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()
    (endpoint,) = spec["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"


def test_pod_runs_non_root_read_only_without_capabilities(deployment, container):
    pod_sc = deployment["spec"]["template"]["spec"]["securityContext"]
    sc = container["securityContext"]
    assert pod_sc["runAsNonRoot"] is True and pod_sc["runAsUser"] != 0
    assert pod_sc["seccompProfile"]["type"] == "RuntimeDefault"
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    assert deployment["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_uid_matches_the_image_user(deployment, source_dir):
    dockerfile = read(os.path.join(source_dir, "Dockerfile"))
    uid = deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert f"USER {uid}:" in dockerfile


def test_resources_are_set(container):
    res = container["resources"]
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(res[kind]), kind


def test_threads_follow_the_cpu_limit(docs, container):
    # lmscored sizes its threads from the cgroup quota the CPU limit sets; a
    # thread count in the ConfigMap would have to agree with it.
    config = one(docs, "ConfigMap", CONFIG)["data"]
    limit = int(container["resources"]["limits"]["cpu"])
    for key in ("LMSCORE_THREADS", "OMP_NUM_THREADS"):
        if key in config:
            assert int(config[key]) == limit, key
    assert int(config.get("LMSCORE_WORKERS", "1")) <= limit


def test_selectors_match_the_pod_labels(docs, deployment):
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selectors = [deployment["spec"]["selector"]["matchLabels"],
                 one(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]]
    selectors += [s["spec"]["selector"] for s in docs if s["kind"] == "Service"]
    selectors.append(one(docs, "PodMonitor")["spec"]["selector"]["matchLabels"])
    for selector in selectors:
        assert selector and selector.items() <= pod_labels.items(), selector


def test_services_route_grpc_to_the_named_port(docs):
    services = {s["metadata"]["name"]: s["spec"] for s in docs if s["kind"] == "Service"}
    assert set(services) == {"lmscored", "lmscored-headless"}
    assert services["lmscored-headless"]["clusterIP"] == "None"
    assert services["lmscored"].get("type", "ClusterIP") == "ClusterIP"
    for spec in services.values():
        port = next(p for p in spec["ports"] if p["name"] == "grpc")
        assert port["port"] == GRPC_PORT and port["targetPort"] == "grpc"
        assert port["appProtocol"] == "grpc"
    # the headless one is for gRPC clients balancing themselves; HTTP goes
    # through the ClusterIP (test_the_service_exposes_the_http_api)
    assert len(services["lmscored-headless"]["ports"]) == 1


def test_hpa_and_pdb_target_the_deployment(docs, deployment):
    hpa = one(docs, "HorizontalPodAutoscaler")["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": deployment["metadata"]["name"]}
    assert 1 <= hpa["minReplicas"] <= hpa["maxReplicas"]
    pdb = one(docs, "PodDisruptionBudget")["spec"]
    assert pdb["minAvailable"] < hpa["minReplicas"], "a PDB as large as the fleet blocks drains"


def test_hpa_scales_on_an_exported_metric_with_cpu_fallback(docs, exported_metrics):
    metrics = one(docs, "HorizontalPodAutoscaler")["spec"]["metrics"]
    custom = [m["pods"] for m in metrics if m["type"] == "Pods"]
    assert custom, "no custom (Pods) metric"
    for m in custom:
        assert m["metric"]["name"] in exported_metrics.families, m
        assert m["target"]["type"] == "AverageValue"
    cpu = [m["resource"] for m in metrics if m["type"] == "Resource"]
    assert [c["name"] for c in cpu] == ["cpu"] and cpu[0]["target"]["type"] == "Utilization"


def test_flags_come_from_the_configmap(docs, container, daemon_env_names):
    config = one(docs, "ConfigMap", CONFIG)
    assert {"configMapRef": {"name": config["metadata"]["name"]}} in container["envFrom"]
    for key in config["data"]:
        assert key in daemon_env_names or key.startswith("OMP_"), key
    assert config["data"]["LMSCORE_LISTEN"].endswith(f":{GRPC_PORT}")


def test_model_volume_is_mounted_read_only(deployment, container):
    volumes = {v["name"] for v in deployment["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert "models" in volumes and mounts["models"]["readOnly"] is True
    assert set(mounts) <= volumes


def test_image_is_pinned_by_the_kustomization(container):
    assert container["image"] == "lmscore:0.1.0"


def seconds(duration):
    """"30s", "500ms", "2m" -> seconds."""
    match = re.fullmatch(r"(\d+)(ms|s|m)", duration)
    assert match, duration
    return int(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[match.group(2)]


def test_grace_period_covers_the_pause_and_the_drain(docs, deployment, container):
    drain = seconds(one(docs, "ConfigMap", CONFIG)["data"]["LMSCORE_DRAIN_TIMEOUT"])
    pause = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > pause + drain


def test_the_hpa_alone_sets_the_replica_count(docs, deployment):
    # a count in the Deployment would reset the HPA's on every `kubectl apply`
    hpa = one(docs, "HorizontalPodAutoscaler")["spec"]
    assert hpa["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert "replicas" not in deployment["spec"]


def test_pods_spread_over_nodes(deployment):
    pod = deployment["spec"]["template"]
    constraints = {c["topologyKey"]: c for c in pod["spec"]["topologySpreadConstraints"]}
    by_node = constraints["kubernetes.io/hostname"]
    assert by_node["whenUnsatisfiable"] == "DoNotSchedule" and by_node["maxSkew"] == 1
    for c in constraints.values():
        assert c["labelSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        assert c["matchLabelKeys"] == ["pod-template-hash"]


def test_network_policy_admits_grpc_and_http_from_the_namespace_and_metrics_from_monitoring(
        docs, deployment, container):
    policy = one(docs, "NetworkPolicy")["spec"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    assert policy["egress"] == [], "lmscored connects nowhere: no egress"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    admitted = {}
    for rule in policy["ingress"]:
        (peer,) = rule["from"]
        for port in rule["ports"]:
            assert port["protocol"] == "TCP" and port["port"] in ports, port
            admitted[ports[port["port"]]] = peer
    assert admitted == {
        GRPC_PORT: {"podSelector": {}},
        HTTP_PORT: {"podSelector": {}},
        METRICS_PORT: {"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "monitoring"}}}}


def test_the_podmonitor_names_the_job_the_alerts_select(docs, deployment):
    spec = one(docs, "PodMonitor")["spec"]
    job = deployment["spec"]["template"]["metadata"]["labels"][spec["jobLabel"]]
    rules = yaml.safe_dump(one(docs, "PrometheusRule")["spec"])
    assert job == "lmscored" and f'job="{job}"' in rules


def test_the_operator_objects_carry_the_kustomization_labels(k8s_dir, docs, tmp_path):
    monitoring = load_docs(os.path.join(k8s_dir, "monitoring", "kustomization.yaml"))[0]
    (entry,) = monitoring["labels"]
    assert "release" in entry["pairs"] and not entry.get("includeSelectors")
    for kind in ("PodMonitor", "PrometheusRule"):
        assert one(docs, kind)["metadata"]["labels"].items() >= entry["pairs"].items(), kind
    assert "release" not in one(docs, "Deployment")["metadata"]["labels"]

    # set to another release, in a copy of the tree
    tree = tmp_path / "k8s"
    shutil.copytree(k8s_dir, tree)
    edited = copy.deepcopy(monitoring)
    edited["labels"][0]["pairs"]["release"] = "prom"
    (tree / "monitoring" / "kustomization.yaml").write_text(yaml.safe_dump(edited))
    rendered = render(str(tree))
    for kind in ("PodMonitor", "PrometheusRule"):
        assert one(rendered, kind)["metadata"]["labels"]["release"] == "prom"
