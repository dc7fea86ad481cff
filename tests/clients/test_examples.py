"""test_examples.py — the Node examples of clients/examples/node run against
a real lmscored: score.mjs (with the .proto: Score, ScoreItems, an error's
ErrorInfo reason) and reflection.mjs (no .proto: everything from the
server's reflection service, as grpcurl and grpc_cli use it). The pinned npm
packages are installed into LMSCORE_NODE_EXAMPLES by clients.node_modules."""

import json
import os
import shutil
import subprocess

import pytest

EXAMPLES = os.path.join(os.environ.get("LMSCORE_SOURCE_DIR", ""), "clients", "examples", "node")


@pytest.fixture(scope="module")
def run_example(daemon):
    prefix = os.environ["LMSCORE_NODE_EXAMPLES"]
    assert os.path.isdir(os.path.join(prefix, "node_modules")), "npm install did not run"

    def run(name):
        # ESM imports resolve next to the script: run it from the install.
        script = os.path.join(prefix, name)
        shutil.copy(os.path.join(EXAMPLES, name), script)
        env = dict(os.environ, LMSCORE_PROTOS=os.path.join(EXAMPLES, "..", "..", "..", "protos"))
        result = subprocess.run(["node", script, daemon.target], capture_output=True, text=True,
                                timeout=120, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]
    return run


def test_score_example(run_example):
    score, stream, error = run_example("score.mjs")
    assert len(score["scores"]) == 2
    for scores in score["scores"]:
        assert abs(sum(scores) - 1) < 1e-5
    assert stream == {"call": "ScoreItems", "count": 100, "item_count": 100}
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["reason"] == "token_id_exceeds_vocab" and error["field"].startswith("items[0]")


def test_reflection_example(run_example):
    services, info, score = run_example("reflection.mjs")
    assert {"lmscore.v1.ScoreService", "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection"} <= set(services["services"])
    assert info["vocab_size"] == 32000
    assert 0 < score["scores"][0] <= 1
