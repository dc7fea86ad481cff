"""Cohere's own JavaScript SDK (npm cohere-ai 8.1.0, pinned in
node-clients/package-lock.json) against a live daemon:
CohereClientV2.rerank on /v2/rerank and CohereClient.rerank on /v1/rerank
with a served name (--served-model-name) and an API key, each answering
what the HTTP API answers to the same body, and a model that is not served
ending in the SDK's NotFoundError. The body the SDK sent is the one shown
in the daemon's answer: the test compares the SDK's parsed results with a
raw HTTP request of the body api.md documents.
"""
import json
import os
import subprocess

import pytest

from harness import Daemon, Http

NODE_DIR = os.environ.get("LMSCORE_NODE_CLIENTS_DIR")
SCRIPT = os.path.join(os.path.dirname(__file__), "node-clients", "cohere.js")
KEY = "test-key-cohere"
QUERY = "What is the capital of France?"
DOCUMENTS = ["Paris is the capital of France.", "Berlin is the capital of Germany.",
             "Bananas are yellow."]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    keys = tmp_path_factory.mktemp("keys") / "keys"
    keys.write_text(KEY + "\n")
    with Daemon("--http-listen", "127.0.0.1:0", "--api-key-file", str(keys),
                "--served-model-name", "rerank-v3.5,tiny") as d:
        yield d


def run_sdk(port):
    assert NODE_DIR and os.path.isdir(os.path.join(NODE_DIR, "node_modules", "cohere-ai")), \
        "service.npm installs cohere-ai"
    env = dict(os.environ, NODE_PATH=os.path.join(NODE_DIR, "node_modules"))
    run = subprocess.run(["node", SCRIPT, f"http://127.0.0.1:{port}", KEY, "rerank-v3.5"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_cohere_sdk_v1_and_v2(daemon):
    api = Http(daemon)
    auth = {"Authorization": f"Bearer {KEY}"}
    got = run_sdk(api.port)
    status, _, raw = api.post("/v2/rerank", {"model": "rerank-v3.5", "query": QUERY,
                                             "documents": DOCUMENTS, "top_n": 2},
                              headers=auth)
    assert status == 200, raw
    # the SDK turns relevance_score into relevanceScore
    assert [(r["index"], r["relevanceScore"]) for r in got["v2"]["results"]] == \
        [(r["index"], r["relevance_score"]) for r in raw["results"]]
    assert len(got["v2"]["results"]) == 2
    assert got["v2"]["meta"]["apiVersion"]["version"] == "2"
    assert got["v2"]["meta"]["tokens"]["inputTokens"] == raw["meta"]["tokens"]["input_tokens"]
    assert got["v2"]["id"] and got["v2"]["id"] != raw["id"]  # a request id per call

    status, _, raw = api.post("/v1/rerank", {"model": "tiny", "query": QUERY,
                                             "documents": DOCUMENTS, "top_n": 2},
                              headers=auth)
    assert status == 200, raw
    assert [(r["index"], r["relevanceScore"], r["document"]["text"])
            for r in got["v1"]["results"]] == \
        [(r["index"], r["relevance_score"], r["document"]["text"]) for r in raw["results"]]

    unknown = got["unknown"]
    assert unknown["error"] == "NotFoundError" and unknown["statusCode"] == 404, unknown
    assert unknown["isCohereError"]
    details = unknown["body"]["error"]["details"][0]
    assert details["reason"] == "unknown_model" and "rerank-v3.5" in \
        unknown["body"]["error"]["message"]
