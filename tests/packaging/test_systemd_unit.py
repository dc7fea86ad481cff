"""test_systemd_unit.py — packaging/lmscored.service and lmscored.env: the
unit passes `systemd-analyze verify` and the offline security audit in a
scratch root holding the real lmscored, carries the settings the daemon's
notify/watchdog protocol and the sandbox need, and the env file only sets
variables the daemon knows."""

import os
import re
import shutil
import subprocess

import pytest

from conftest import read

UNIT_NAME = "lmscored.service"
# systemd-analyze security: 0 is a fully locked-down unit, 10 an unprotected one.
MAX_EXPOSURE = 2.0


def unit_settings(text):
    """[Section] -> {key: [values in order]} (systemd allows repeated keys)."""
    settings, section = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = settings.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        section.setdefault(key.strip(), []).append(value.strip())
    return settings


@pytest.fixture(scope="module")
def unit_text(source_dir):
    return read(os.path.join(source_dir, "packaging", UNIT_NAME))


@pytest.fixture(scope="module")
def service(unit_text):
    return unit_settings(unit_text)["Service"]


@pytest.fixture
def scratch_root(tmp_path, build_dir, source_dir):
    """A root with the system's unit library, the built daemon as
    /usr/bin/lmscored and the env file where the unit expects them."""
    root = tmp_path / "root"
    shutil.copytree("/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
    (root / "usr/bin").mkdir(parents=True)
    shutil.copy2(os.path.join(build_dir, "service", "lmscored"), root / "usr/bin/lmscored")
    (root / "etc/lmscore").mkdir(parents=True)
    shutil.copy2(os.path.join(source_dir, "packaging", "lmscored.env"),
                 root / "etc/lmscore/lmscored.env")
    (root / "etc/systemd/system").mkdir(parents=True)
    return root


def install_unit(root, text):
    path = root / "etc/systemd/system" / UNIT_NAME
    path.write_text(text)
    return str(path)


def analyze(*args):
    return subprocess.run(["systemd-analyze", *args], capture_output=True, text=True, timeout=120)


def verify(root, unit_path):
    return analyze("verify", "--man=no", f"--root={root}", unit_path)


def test_unit_passes_systemd_analyze_verify(scratch_root, unit_text):
    result = verify(scratch_root, install_unit(scratch_root, unit_text))
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), \
        result.stdout + result.stderr


def test_verify_catches_a_misspelt_setting(scratch_root, unit_text):
    # The check above is only worth something if verify reports such mistakes.
    broken = unit_text.replace("ProtectSystem=strict", "ProtectSytem=strict")
    result = verify(scratch_root, install_unit(scratch_root, broken))
    assert "Unknown key" in result.stdout + result.stderr


def test_verify_catches_a_missing_executable(scratch_root, unit_text):
    os.remove(scratch_root / "usr/bin/lmscored")
    result = verify(scratch_root, install_unit(scratch_root, unit_text))
    assert result.returncode != 0
    assert "/usr/bin/lmscored" in result.stdout + result.stderr


def test_security_exposure_is_low(scratch_root, unit_text):
    result = analyze("security", "--no-pager", "--offline=yes", f"--root={scratch_root}",
                     f"--threshold={int(MAX_EXPOSURE * 10)}",
                     install_unit(scratch_root, unit_text))
    out = result.stdout + result.stderr
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", out)
    assert match, out
    assert float(match.group(1)) <= MAX_EXPOSURE, out
    assert result.returncode == 0, out


@pytest.mark.parametrize("key, value", [
    ("Type", "notify"),
    ("NotifyAccess", "main"),
    ("Restart", "on-failure"),
    ("DynamicUser", "yes"),
    ("ProtectSystem", "strict"),
    ("ProtectHome", "yes"),
    ("PrivateTmp", "yes"),
    ("NoNewPrivileges", "yes"),
    ("CapabilityBoundingSet", ""),
    ("MemoryDenyWriteExecute", "yes"),
    ("EnvironmentFile", "/etc/lmscore/lmscored.env"),
    ("ExecStart", "/usr/bin/lmscored"),
])
def test_service_setting(service, key, value):
    assert service.get(key) == [value]


def test_watchdog_is_set(service):
    (value,) = service["WatchdogSec"]
    assert re.fullmatch(r"\d+s?", value) and int(value.rstrip("s")) > 0


def test_syscall_filter_allows_system_service_only(service):
    assert service["SystemCallFilter"][0] == "@system-service"
    assert all(v.startswith("~") for v in service["SystemCallFilter"][1:])


def test_network_families_are_restricted(service):
    (families,) = service["RestrictAddressFamilies"]
    assert set(families.split()) == {"AF_UNIX", "AF_INET", "AF_INET6"}


def env_assignments(text):
    pairs = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"not an assignment: {line!r}"
            pairs[key] = value
    return pairs


def test_env_file_sets_only_known_variables(source_dir, daemon_env_names):
    pairs = env_assignments(read(os.path.join(source_dir, "packaging", "lmscored.env")))
    for key in pairs:
        assert key in daemon_env_names or key.startswith("OMP_"), \
            f"lmscored.env sets {key}, which lmscored --help does not know"
    assert "LMSCORE_MODEL" in pairs and "LMSCORE_LISTEN" in pairs


def test_env_file_commented_variables_are_known(source_dir, daemon_env_names):
    text = read(os.path.join(source_dir, "packaging", "lmscored.env"))
    for name in re.findall(r"^#(LMSCORE_[A-Z0-9_]+)=", text, re.M):
        assert name in daemon_env_names, name


def test_stop_timeout_covers_the_drain(source_dir, service):
    env = env_assignments(read(os.path.join(source_dir, "packaging", "lmscored.env")))
    drain = int(env["LMSCORE_DRAIN_TIMEOUT"].rstrip("s"))
    (stop,) = service["TimeoutStopSec"]
    assert int(stop.rstrip("s")) > drain
