"""test_image.py — the Dockerfile built with podman and run.

The image is built the way `make image` builds it (`--format docker`, so the
HEALTHCHECK survives) except that the build stage is this build tree: a
build context named `build` stands in for the stage (COPY --from=build takes
the daemon, the CLI and the demo model from it), so the test compiles nothing.
The base images come from scripts/debian-base-images.sh (debootstrap, kept
under the build tree), the runtime stage's packages from Debian's archive.
The container then runs as the image's non-root user with a read-only root,
no capabilities and no new privileges: `lmscore health` inside it and the
image's own HEALTHCHECK say SERVING, a Score call from the host is answered,
/metrics is served (the image turns it on, port 9464), and SIGTERM ends it
with status 0. The image keeps no apt caches, and its size less the two
binaries stays within IMAGE_BUDGET_BYTES (docs/deployment.md#docker).

Skipped, with the reason, where podman is missing, the base images cannot be
made (no root, no debootstrap) or podman cannot start a container here."""

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid

import pytest

from conftest import SOURCE_DIR

TAG = "localhost/lmscore:packaging-test"
# The base image, the runtime libraries and the demo model: 153 MB with the
# base images of scripts/debian-base-images.sh. The binaries are left out of
# the count: a sanitizer test build's are several times the release ones.
IMAGE_BUDGET_BYTES = 170_000_000


def sh(*argv, timeout=600, check=True):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"{argv}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def podman_options(build_dir):
    """The options podman needs here; skips where it cannot run at all."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (scripts/install-deps.sh --test installs it)")
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        pytest.skip("making the base images needs root and debootstrap")
    made = sh("sh", os.path.join(SOURCE_DIR, "scripts", "debian-base-images.sh"),
              os.path.join(build_dir, "image-cache"), timeout=900, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot make the debian:bookworm base images: {made.stderr[-2000:]}")
    probe = sh("sh", os.path.join(SOURCE_DIR, "scripts", "podman-options.sh"), check=False)
    if probe.returncode != 0:
        pytest.skip(probe.stderr.strip())
    return probe.stdout.split()


@pytest.fixture(scope="module")
def image(podman_options, build_dir, tmp_path_factory):
    """The image, built with this build tree as its build stage."""
    stage = tmp_path_factory.mktemp("build-stage")
    for path in ("service/lmscored", "clients/c/lmscore", "models/tiny-qwen3.gguf"):
        dst = stage / "src" / "build" / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(build_dir, path), dst)
    t0 = time.monotonic()
    sh("podman", "build", *podman_options, "--format", "docker", "--pull=never",
       "--network", "host", "--build-context", f"build={stage}", "--tag", TAG, SOURCE_DIR,
       timeout=900)
    size = image_size(TAG)
    print(f"image {TAG}: {size / 1e6:.0f} MB, built in {time.monotonic() - t0:.0f} s")
    yield TAG
    sh("podman", "rmi", "--force", TAG, check=False)


def image_size(tag):
    return int(sh("podman", "image", "inspect", tag, "--format", "{{.Size}}").stdout)


def logs(name):
    result = sh("podman", "logs", name)
    return result.stdout + result.stderr


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def container(image, podman_options, build_dir):
    """(name, target) of the image running hardened, on the host's network."""
    name = f"lmscore-test-{uuid.uuid4().hex[:8]}"
    target = f"127.0.0.1:{free_port()}"
    # on the host's network the image's ports could be taken: free ones instead
    metrics = f"127.0.0.1:{free_port()}"
    sh("podman", "run", *podman_options, "--detach", "--name", name, "--network", "host",
       "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
       "--env", f"LMSCORE_LISTEN={target}", "--env", f"LMSCORE_TARGET={target}",
       "--env", f"LMSCORE_METRICS_LISTEN={metrics}",
       # a sanitizer build's leak check needs ptrace, which the container drops
       "--env", "ASAN_OPTIONS=detect_leaks=0", image)
    try:
        cli = os.path.join(build_dir, "clients", "c", "lmscore")
        deadline = time.monotonic() + 180
        while sh(cli, "health", "--target", target, "--timeout", "2", check=False).returncode:
            running = sh("podman", "inspect", name, "--format", "{{.State.Running}}").stdout
            assert running.strip() == "true", f"the container exited:\n{logs(name)}"
            assert time.monotonic() < deadline, f"never SERVING:\n{logs(name)}"
            time.sleep(0.5)
        yield name, target, metrics
    finally:
        sh("podman", "rm", "--force", "--time", "0", name, check=False)


def test_image_runs_as_its_non_root_user_with_the_healthcheck(image):
    config = sh("podman", "image", "inspect", image, "--format",
                "{{.Config.User}} {{json .Config.Healthcheck.Test}}").stdout
    user, health = config.split(" ", 1)
    assert user == "10001:10001"
    assert '"/usr/bin/lmscore","health"' in health, "the HEALTHCHECK was dropped (--format?)"


def test_image_serves_grpc_metrics_and_http_by_default(image):
    config = sh("podman", "image", "inspect", image, "--format",
                "{{json .Config.ExposedPorts}} {{json .Config.Env}}").stdout
    ports, env = config.split(" ", 1)
    assert set(json.loads(ports)) == {"50051/tcp", "9464/tcp", "8080/tcp"}
    assert "LMSCORE_METRICS_LISTEN=0.0.0.0:9464" in json.loads(env)
    assert "LMSCORE_HTTP_LISTEN=0.0.0.0:8080" in json.loads(env)
    assert "LMSCORE_LISTEN=0.0.0.0:50051" in json.loads(env)


def test_image_keeps_no_apt_caches_and_stays_small(image, podman_options, build_dir):
    listed = sh("podman", "run", *podman_options, "--rm", "--network", "none", "--entrypoint",
                "sh", image, "-c",
                "ls /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /var/lib/apt/lists/* "
                "2>/dev/null; true").stdout
    assert listed == "", f"apt left in the image:\n{listed}"
    binaries = sum(os.path.getsize(os.path.join(build_dir, p))
                   for p in ("service/lmscored", "clients/c/lmscore"))
    rest = image_size(image) - binaries
    assert rest <= IMAGE_BUDGET_BYTES, \
        f"the image less its binaries is {rest / 1e6:.0f} MB (budget {IMAGE_BUDGET_BYTES / 1e6:.0f})"


def test_health_inside_the_container(container):
    name, _, _ = container
    assert sh("podman", "exec", name, "/usr/bin/lmscore", "health").stdout.strip() == "SERVING"
    assert sh("podman", "exec", name, "id", "-u").stdout.strip() == "10001"
    # the image's own HEALTHCHECK command, as the engine runs it
    assert sh("podman", "healthcheck", "run", name, check=False).returncode == 0


def test_root_is_read_only(container):
    name, _, _ = container
    wrote = sh("podman", "exec", name, "sh", "-c", "echo x > /usr/share/x", check=False)
    assert wrote.returncode != 0 and "Read-only file system" in wrote.stderr


def test_score_from_the_host(container, build_dir):
    _, target, _ = container
    out = sh(os.path.join(build_dir, "clients", "c", "lmscore"), "score", "--target", target,
             "--query", "Is this review positive?", "--item", " Great phone",
             "--item", " Broke in a day", "--label", " yes", "--label", " no").stdout
    rows = [line.split("\t") for line in out.splitlines()[1:]]
    assert [r[0] for r in rows] == ["0", "1"]
    assert all(0 < float(x) <= 1 for r in rows for x in r[1:])


def test_metrics_from_the_host(container):
    _, _, metrics = container
    with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=30) as resp:
        body = resp.read().decode()
    assert "lmscore_serving 1\n" in body and "process_start_time_seconds " in body


def test_sigterm_exits_cleanly(container):
    name, _, _ = container
    sh("podman", "stop", "--time", "60", name, timeout=120)
    state = sh("podman", "inspect", name, "--format", "{{.State.ExitCode}}").stdout.strip()
    log = logs(name)
    assert state == "0", log
    assert re.search(r'msg="signal received: draining" signal=SIGTERM', log), log
    assert 'msg="stopped"' in log, log
