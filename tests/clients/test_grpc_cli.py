"""test_grpc_cli.py — docs/clients.md's grpc_cli commands, run as written
(127.0.0.1:50051 replaced by a real lmscored) with the real grpc_cli, built
from Debian's grpc source package by build_grpc_cli.sh once per machine and
version (kept in ~/.cache/lmscore/grpc_cli-VERSION/);
and what the docs say about it: a bidi call's messages need a blank line
after each, and with TLS a private CA reaches grpc_cli only through
GRPC_DEFAULT_SSL_ROOTS_FILE_PATH (it has no CA flag).

Skipped, with the reason, where grpc_cli cannot be built (no deb-src access,
no libgrpc++-dev)."""

import os
import re
import subprocess

import pytest

from daemon import Daemon, build_dir

SOURCE = os.environ["LMSCORE_SOURCE_DIR"]
DOC_TARGET = "127.0.0.1:50051"


def tool_cache():
    """Where the built grpc_cli is kept for later build trees on this machine
    (its build takes minutes): $LMSCORE_TOOL_CACHE, else ~/.cache/lmscore."""
    return os.environ.get("LMSCORE_TOOL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "lmscore")


@pytest.fixture(scope="module")
def grpc_cli():
    version = subprocess.run(["dpkg-query", "-W", "-f=${source:Version}", "libgrpc++-dev"],
                             capture_output=True, text=True).stdout.strip()
    if not version:
        pytest.skip("libgrpc++-dev is not installed (scripts/install-deps.sh --test)")
    prefix = os.path.join(tool_cache(), f"grpc_cli-{version}")
    built = subprocess.run(["sh", os.path.join(SOURCE, "tests", "clients", "build_grpc_cli.sh"),
                            prefix], capture_output=True, text=True, timeout=1200)
    if built.returncode != 0:
        pytest.skip(f"cannot build grpc_cli from Debian's grpc source: {built.stderr[-1500:]}")
    return os.path.join(prefix, "grpc_cli")


def documented_commands():
    """The shell commands of docs/clients.md's code blocks that run grpc_cli
    (continuation lines joined), comments dropped."""
    with open(os.path.join(SOURCE, "docs", "clients.md"), encoding="utf-8") as f:
        text = f.read()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        joined = re.sub(r"\|\n\s*", "| ", joined)
        for line in joined.splitlines():
            if "grpc_cli " in line and not line.lstrip().startswith("#") \
                    and "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH" not in line:
                commands.append(line.strip())
    return commands


def run(command, grpc_cli, target, env=None, timeout=120):
    command = command.replace(DOC_TARGET, target).replace("grpc_cli ", f"{grpc_cli} ")
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def daemon():
    d = Daemon(model="tiny-qwen3.gguf")
    yield d
    d.stop()


def test_the_docs_have_grpc_cli_commands():
    commands = documented_commands()
    assert len(commands) >= 8, commands
    assert any("ScoreItems" in c for c in commands)


@pytest.mark.parametrize("command", documented_commands())
def test_documented_command(command, grpc_cli, daemon):
    result = run(command, grpc_cli, daemon.target)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    assert "Rpc failed" not in result.stdout + result.stderr


def test_documented_answers(grpc_cli, daemon):
    by_method = {re.search(r" call \S+ (\S+)", c).group(1): c
                 for c in documented_commands() if " call " in c}
    health = run(by_method["grpc.health.v1.Health.Check"], grpc_cli, daemon.target)
    assert "status: SERVING" in health.stdout
    score = run(by_method["lmscore.v1.ScoreService.Score"], grpc_cli, daemon.target)
    assert score.stdout.count("items {") == 2 and "algorithm:" in score.stdout
    items = run(by_method["lmscore.v1.ScoreService.ScoreItems"], grpc_cli, daemon.target)
    assert "item_count: 2" in items.stdout, items.stdout + items.stderr


def test_bidi_messages_need_a_blank_line_after_each(grpc_cli, daemon):
    command = next(c for c in documented_commands() if "ScoreItems" in c)
    without = command.replace(r"printf '%s\n\n'", r"printf '%s\n'")
    assert without != command
    result = run(without, grpc_cli, daemon.target)
    assert result.returncode != 0 and "missing_header" in result.stdout + result.stderr


def test_tls_with_a_private_ca_needs_the_environment(grpc_cli, pki):
    d = Daemon(model="tiny-qwen3.gguf",
               flags=["--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")],
               ready_args=["--ca-cert", str(pki / "ca.pem")])
    try:
        call = (f"grpc_cli --channel_creds_type=ssl --ssl_target=localhost call {DOC_TARGET} "
                "grpc.health.v1.Health.Check ''")
        refused = run(call, grpc_cli, d.target)
        assert refused.returncode != 0 and "certificate verify failed" in refused.stdout + \
            refused.stderr
        trusted = run(call, grpc_cli, d.target,
                      env={"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(pki / "ca.pem")})
        assert trusted.returncode == 0 and "status: SERVING" in trusted.stdout, trusted.stderr
    finally:
        d.stop()
