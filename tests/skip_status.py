"""skip_status.py — a pytest plugin (`-p skip_status`, with tests/ on
PYTHONPATH) that makes ctest report pytest's skips as skips.

Where LMSCORE_SKIP_RETURN_CODE is set, a run that failed nothing exits with
that code (the suite's SKIP_RETURN_CODE) when it skipped a test and either
passed none or LMSCORE_SKIP_WHEN is "any" (the default, for suites whose every
test needs an outside tool, such as podman or grpc_cli, and for the
`platform` entries below); LMSCORE_SKIP_WHEN=all keeps a suite whose skips
are only some of its tests reported as passed (run it with -rs: it lists
them).

It also registers the `platform` mark: a test that needs something of the
platform that may be missing (a CPU feature, a second CPU, root for a
cgroup, a private mount namespace). tests/service/CMakeLists.txt runs a
suite's platform tests as an entry of their own (`-m platform`), so that one
that cannot run here is reported as skipped rather than hidden among passes."""

import os


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "platform: needs something of the platform that may be missing; "
        "run as its own ctest entry, reported as skipped where it cannot run")


def pytest_sessionfinish(session, exitstatus):
    code = os.environ.get("LMSCORE_SKIP_RETURN_CODE")
    stats = session.config.pluginmanager.get_plugin("terminalreporter").stats
    if not code or exitstatus != 0 or not stats.get("skipped"):
        return
    if os.environ.get("LMSCORE_SKIP_WHEN", "any") == "any" or not stats.get("passed"):
        session.exitstatus = int(code)
