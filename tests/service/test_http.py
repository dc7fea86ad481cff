"""The HTTP API (--http-listen): POST /v1/score answers what the gRPC Score
call answers for the same request, bit for bit (text and token ids,
apply_softmax, item_first, empty items, label texts, logprobs, every
algorithm, a delimiter); every error has the HTTP status a client expects
and the gRPC call's reason and field; bodies over the limits are refused
without being held (a 1 GiB Content-Length, a chunked body past the limit,
slow bodies against the receive budget, the slowest closed for faster
ones) and memory stays bounded; a client
that hangs up cancels its call; the calls are counted in the metrics; the
queue, the loading and the drain answer 429 and 503 (and GET /health
says so). /v2/rerank and /rerank rank with /v1/rerank's numbers in their
own shapes; required members left out are refused by name; the served
names (--served-model-name) are the ones a request may name.
"""
import json
import math
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time

import grpc
import pytest

from harness import (LMSCORED, LMSCORED_TEST_HOOKS, MODEL, Daemon, Http, Metrics, RssSampler,
                     error_info, http_error, raw_connect, read_until_close, start_long_score,
                     steady_memory_env, text, tokens, value)
from lmscore.v1 import score_pb2, score_pb2_grpc

VOCAB = 151936
DELIM = 151643
YES, NO = 9834, 902  # " yes", " no" in the demo model's tokenizer
ALGORITHMS = ["ALGORITHM_SERIAL", "ALGORITHM_PACKED_DENSE", "ALGORITHM_PACKED_SEGMENT",
              "ALGORITHM_PREFILL_EXTEND"]


def as_input(v):
    if v is None:
        return score_pb2.Input()
    return text(v) if isinstance(v, str) else tokens(v)


def both(query, items, labels=(), **fields):
    """The same request as a JSON body and as a gRPC ScoreRequest. labels:
    token ids (label_token_ids) or texts (label_texts)."""
    body = {"query": query, "items": items, **fields}
    msg = dict(fields)
    if "algorithm" in msg:
        msg["algorithm"] = score_pb2.Algorithm.Value(msg["algorithm"])
    if labels and isinstance(labels[0], str):
        body["label_texts"] = list(labels)
        msg["label_texts"] = list(labels)
    else:
        body["label_token_ids"] = list(labels)
        msg["label_token_ids"] = list(labels)
    req = score_pb2.ScoreRequest(query=as_input(query), items=[as_input(i) for i in items], **msg)
    return body, req


def bits(x):
    return struct.pack("<f", x)


def same_floats(http_rows, grpc_rows):
    assert len(http_rows) == len(grpc_rows)
    for h, g in zip(http_rows, grpc_rows):
        assert [bits(v) for v in h] == [bits(v) for v in g], (h, list(g))


@pytest.fixture(scope="module")
def daemon():
    # no prefix cache: both doors compute every query, so the bits compare
    with Daemon("--http-listen", "127.0.0.1:0", "--prefix-cache-bytes", "0",
                "--metrics-listen", "127.0.0.1:0") as d:
        yield d


@pytest.fixture(scope="module")
def api(daemon):
    return Http(daemon)


@pytest.fixture(scope="module")
def stub(daemon):
    with daemon.channel() as ch:
        yield score_pb2_grpc.ScoreServiceStub(ch)


PARITY = {
    "text": both("The capital of France is", [" Paris", " London", ""], [YES, NO]),
    "ids": both([785, 6722, 315, 9625, 374], [[12095], [7148, 11], []], [YES, NO, 13]),
    "softmax": both("Is the sky blue?", [" Yes.", " No."], [YES, NO], apply_softmax=True),
    "item_first": both("is a city.", ["Tokyo", "Banana"], [YES, NO], item_first=True),
    "empty_items": both("Nothing to score", [], [YES]),
    "label_texts": both("Pick one:", [" a", " b"], [" yes", " no"], apply_softmax=True),
    "logprobs": both([1, 2, 3, 4], [[5, 6], [7]], [8, 9], return_logprobs=True,
                     apply_softmax=True),
    **{a.lower(): both([100 + i for i in range(12)], [[7] * 3, [8] * 5, [9]], [YES, NO],
                       algorithm=a)
       for a in ALGORITHMS},
}


def assert_parity(api, stub, body, req):
    status, headers, got = api.score(body)
    assert status == 200, got
    assert headers["Content-Type"] == "application/json"
    want = stub.Score(req, timeout=120)
    assert got["object"] == "scoring" and got["model"] == "tiny-qwen3"
    assert isinstance(got["created"], int) and abs(got["created"] - time.time()) < 600
    same_floats(got["scores"], [it.scores for it in want.items])
    if req.return_logprobs:
        same_floats(got["logprobs"], [it.logprobs for it in want.items])
    else:
        assert "logprobs" not in got
    assert got["label_token_ids"] == list(want.label_token_ids)
    assert got["algorithm"] == score_pb2.Algorithm.Name(want.algorithm)
    usage = got["usage"]
    assert usage["prompt_tokens"] == want.usage.prompt_tokens == usage["total_tokens"]
    assert usage["completion_tokens"] == 0
    assert usage["computed_tokens"] == want.usage.computed_tokens
    for name in ("queue_time", "prepare_time", "engine_time"):
        assert got["timing"][name].endswith("s")


@pytest.mark.parametrize("case", list(PARITY))
def test_score_equals_grpc(api, stub, case):
    assert_parity(api, stub, *PARITY[case])


def test_delimiter_parity():
    with Daemon("--http-listen", "127.0.0.1:0", "--prefix-cache-bytes", "0",
                "--multi-item-scoring-delimiter", str(DELIM)) as d, d.channel() as ch:
        api, stub = Http(d), score_pb2_grpc.ScoreServiceStub(ch)
        for body, req in [both([1, 2, 3], [[4, 5], [6]], [YES, NO]),
                          both("A query", [" one", " two"], [YES], apply_softmax=True)]:
            assert_parity(api, stub, body, req)


def test_keep_alive_and_extra_members(api):
    conn = api.connection()
    try:
        for _ in range(3):
            # unknown members are skipped, null is absent
            status, _, got = api.score({"query": [1, 2], "items": [[3]], "label_token_ids": [4],
                                        "apply_softmax": None, "extra": {"a": [1, {"b": None}]},
                                        "model": "tiny-qwen3"}, conn=conn)
            assert status == 200 and len(got["scores"]) == 1, got
    finally:
        conn.close()


def test_concurrent_http_and_grpc(api, stub):
    body, req = PARITY["ids"]
    want = [list(it.scores) for it in stub.Score(req, timeout=120).items]
    failures = []

    def http_client():
        for _ in range(5):
            status, _, got = api.score(body)
            if status != 200 or [[bits(v) for v in r] for r in got["scores"]] != \
                    [[bits(v) for v in r] for r in want]:
                failures.append((status, got))

    def grpc_client():
        for _ in range(5):
            if [list(it.scores) for it in stub.Score(req, timeout=120).items] != want:
                failures.append("grpc")
    threads = [threading.Thread(target=f) for f in [http_client] * 4 + [grpc_client] * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not failures, failures[:3]


def test_metrics_count_http_calls(daemon, api):
    before = Metrics(daemon).scrape()
    api.score({"query": [1], "items": [[2]], "label_token_ids": [3]})
    api.score({"query": [1], "items": [[VOCAB]], "label_token_ids": [3]})
    api.rerank({"query": "q", "documents": ["d"]})
    daemon.wait_idle()
    after = Metrics(daemon).scrape()

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)
    assert grew("lmscore_requests_total", service="http", method="score", code="OK") == 1
    assert grew("lmscore_requests_total", service="http", method="score",
                code="INVALID_ARGUMENT") == 1
    assert grew("lmscore_requests_total", service="http", method="rerank", code="OK") == 1
    assert grew("lmscore_errors_total", reason="token_id_exceeds_vocab",
                code="INVALID_ARGUMENT") == 1
    assert grew("lmscore_items_scored_total") == 2
    # the HELP texts of the families that counted these HTTP calls say so
    _, text = Metrics(daemon).get()
    for family in ("lmscore_requests_total", "lmscore_errors_total",
                   "lmscore_requests_started_total"):
        (help_line,) = [line for line in text.splitlines()
                        if line.startswith(f"# HELP {family} ")]
        assert "HTTP" in help_line, help_line


# --- rerank ----------------------------------------------------------------

QUERY = "What is the capital of France?"
DOCS = ["Paris is the capital of France.", "Berlin is in Germany.", "Bananas are yellow.",
        "The Eiffel tower is in Paris."]


def yes_no_request(query, docs, **fields):
    """The ScoreRequest the default profile (yes-no) makes of a rerank."""
    return score_pb2.ScoreRequest(
        query=text(f"Query: {query}\nDocument:"),
        items=[text(f" {d}\nIs the document relevant to the query? Answer:") for d in docs],
        label_token_ids=[YES, NO], apply_softmax=True, **fields)


def test_rerank(api, stub):
    status, _, got = api.rerank({"query": QUERY, "documents": DOCS, "model": "tiny-qwen3"})
    assert status == 200, got
    want = [it.scores[0] for it in stub.Score(yes_no_request(QUERY, DOCS), timeout=120).items]
    results = got["results"]
    assert sorted(r["index"] for r in results) == list(range(len(DOCS)))
    for r in results:
        assert bits(r["relevance_score"]) == bits(want[r["index"]])
        assert r["document"] == {"text": DOCS[r["index"]]}
    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert got["model"] == "tiny-qwen3" and got["usage"]["total_tokens"] > 0

    # top_n, documents as objects, no documents back
    status, _, top = api.rerank({"query": QUERY, "documents": [{"text": d, "id": i}
                                                               for i, d in enumerate(DOCS)],
                                 "top_n": 2, "return_documents": False})
    assert status == 200, top
    assert [r["index"] for r in top["results"]] == [r["index"] for r in results[:2]]
    assert all("document" not in r for r in top["results"])
    status, _, none = api.rerank({"query": QUERY, "documents": []})
    assert status == 200 and none["results"] == []


def log_odds(it):
    """The log-odds of the first label from an item's log-probabilities, in
    float64: what /rerank's raw_scores answers."""
    first, rest = it.logprobs[0], list(it.logprobs[1:])
    top = max(rest)
    return first - (top + math.log(sum(math.exp(x - top) for x in rest)))


def test_rerank_dialects(api, stub):
    """/v2/rerank (Cohere v2) and /rerank (TEI) rank with /v1/rerank's
    numbers, bit for bit, each in its own shape; TEI's raw_scores are the
    log-odds whose sigmoid is the relevance."""
    grpc_items = stub.Score(yes_no_request(QUERY, DOCS, return_logprobs=True),
                            timeout=120).items
    want = [it.scores[0] for it in grpc_items]
    order = sorted(range(len(DOCS)), key=lambda i: (-want[i], i))

    status, headers, v2 = api.post("/v2/rerank", {"model": "tiny-qwen3", "query": QUERY,
                                                  "documents": DOCS, "top_n": 2,
                                                  "max_tokens_per_doc": 512, "priority": 0})
    assert status == 200, v2
    assert set(v2) == {"id", "results", "meta"}, v2
    assert v2["id"] == headers["x-request-id"]
    assert [r["index"] for r in v2["results"]] == order[:2]
    for r in v2["results"]:
        assert set(r) == {"index", "relevance_score"}
        assert bits(r["relevance_score"]) == bits(want[r["index"]])
    assert v2["meta"]["api_version"] == {"version": "2"}
    status, _, v1 = api.rerank({"query": QUERY, "documents": DOCS})
    assert v2["meta"]["tokens"] == {"input_tokens": v1["usage"]["prompt_tokens"],
                                    "output_tokens": 0}

    status, _, tei = api.post("/rerank", {"query": QUERY, "texts": DOCS,
                                          "truncate": False, "truncation_direction": "Right"})
    assert status == 200 and isinstance(tei, list), tei
    assert [r["index"] for r in tei] == order
    assert all(set(r) == {"index", "score"} for r in tei), tei
    assert [bits(r["score"]) for r in tei] == [bits(want[i]) for i in order]
    status, _, raw = api.post("/rerank", {"query": QUERY, "texts": DOCS, "raw_scores": True,
                                          "return_text": True})
    assert status == 200, raw
    assert [r["index"] for r in raw] == order
    for r in raw:
        assert r["text"] == DOCS[r["index"]]
        assert r["score"] == pytest.approx(log_odds(grpc_items[r["index"]]), rel=1e-6, abs=1e-6)
        assert 1 / (1 + math.exp(-r["score"])) == pytest.approx(want[r["index"]], rel=1e-5)


def test_required_members_and_misspellings(api):
    """A required member left out (or misspelled) is refused by name; a
    misspelled optional member is skipped, as proto3 JSON skips it."""
    base = {"query": [1, 2], "items": [[3]], "label_token_ids": [4]}
    for body, field in [({k: v for k, v in base.items() if k != "items"}, "items"),
                        ({"query": [1, 2], "itmes": [[3]], "label_token_ids": [4]}, "items"),
                        (dict(base, items=None), "items"),
                        ({k: v for k, v in base.items() if k != "query"}, "query")]:
        status, _, got = api.score(body)
        assert status == 400 and http_error(got) == ("missing_field", field), (body, got)
    status, _, got = api.score(dict(base, apply_sofmax=True))
    assert status == 200 and got["scores"][0][0] < 0.5, got  # not normalised: skipped
    for path, body, field in [("/v1/rerank", {"query": "q"}, "documents"),
                              ("/v2/rerank", {"documents": ["d"]}, "query"),
                              ("/rerank", {"query": "q", "documents": ["d"]}, "texts")]:
        status, _, got = api.post(path, body)
        assert status == 400 and http_error(got) == ("missing_field", field), (path, got)


def test_get_paths(daemon, api):
    before = Metrics(daemon).scrape()
    status, headers, got = api.post("/health", b"", method="GET")
    assert (status, got) == (200, {"status": "SERVING"}) and headers["x-request-id"]
    status, _, got = api.post("/v1/models", b"", method="GET")
    assert status == 200 and [m["id"] for m in got["data"]] == ["tiny-qwen3"], got
    assert got["object"] == "list" and got["data"][0]["object"] == "model"
    assert abs(got["data"][0]["created"] - time.time()) < 3600
    status, _, got = api.post("/openapi.json", b"", method="GET")
    assert status == 200 and got["openapi"].startswith("3.1")
    for path in ("/health", "/v1/models", "/openapi.json"):
        status, headers, got = api.post(path, {})
        assert status == 405 and headers["Allow"] == "GET, HEAD", got
        assert http_error(got) == ("method_not_allowed", None)
    # apart from the scoring calls, as gRPC health is
    daemon.wait_idle()
    after = Metrics(daemon).scrape()
    for method in ("health", "models", "openapi"):
        assert value(after, "lmscore_requests_total", service="http_info", method=method,
                     code="OK") - value(before, "lmscore_requests_total", service="http_info",
                                        method=method, code="OK") == 1, method


def test_served_model_names():
    """--served-model-name: every name is accepted, the first is answered
    and listed first; the file's own name is then not served."""
    with Daemon("--http-listen", "127.0.0.1:0", "--served-model-name", "alpha,rerank-v3.5") as d:
        api = Http(d)
        body = {"query": [1, 2], "items": [[3]], "label_token_ids": [4]}
        for name in ("alpha", "rerank-v3.5", None):
            status, _, got = api.score(dict(body, model=name) if name else body)
            assert status == 200 and got["model"] == "alpha", got
        status, _, got = api.score(dict(body, model="tiny-qwen3"))
        assert status == 404 and http_error(got) == ("unknown_model", "model"), got
        status, _, got = api.post("/v2/rerank", {"model": "rerank-v3.5", "query": "q",
                                                 "documents": ["d"]})
        assert status == 200, got
        status, _, got = api.post("/v1/models", b"", method="GET")
        assert [m["id"] for m in got["data"]] == ["alpha", "rerank-v3.5"], got
    for bad in ("a,,b", "a,a", ",", "a\tb", ",".join(f"m{i}" for i in range(17))):
        run = subprocess.run([LMSCORED, "--model", MODEL, "--served-model-name", bad],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 2 and "served-model-name" in run.stderr, (bad, run.stderr)


def test_rerank_profiles(tmp_path):
    """qwen3-reranker's prompt, and a profile file with one label (the
    relevance is then the label's own probability)."""
    profile = tmp_path / "one-label.json"
    profile.write_text(json.dumps({"template": "<{query}> and <{document}>: good?",
                                   "labels": [" yes"], "note": "skipped"}))
    for spec, request in [
        ("qwen3-reranker", lambda q, d: score_pb2.ScoreRequest(
            query=text("<|im_start|>system\nJudge whether the Document meets the requirements "
                       "based on the Query and the Instruct provided. Note that the answer can "
                       "only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: "
                       "Given a web search query, retrieve relevant passages that answer the "
                       f"query\n<Query>: {q}\n<Document>:"),
            items=[text(f" {x}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
                   for x in d],
            label_texts=["yes", "no"], apply_softmax=True)),
        (str(profile), lambda q, d: score_pb2.ScoreRequest(
            query=text(f"<{q}> and <"), items=[text(f"{x}>: good?") for x in d],
            label_texts=[" yes"])),
    ]:
        with Daemon("--http-listen", "127.0.0.1:0", "--rerank-profile", spec,
                    "--prefix-cache-bytes", "0") as d, d.channel() as ch:
            status, _, got = Http(d).rerank({"query": QUERY, "documents": DOCS})
            assert status == 200, got
            want = score_pb2_grpc.ScoreServiceStub(ch).Score(request(QUERY, DOCS), timeout=120)
            for r in got["results"]:
                assert bits(r["relevance_score"]) == bits(want.items[r["index"]].scores[0]), spec


@pytest.mark.parametrize("model,fits", [("tiny-qwen3.gguf", True), ("tiny-llama3.gguf", True),
                                        ("tiny-llama.gguf", False)])
def test_which_tokenizers_the_yes_no_profile_fits(tmp_path, model, fits):
    """api.md's claim: " yes" and " no" are one token each with Qwen's and
    Llama 3's tokenizers; with Llama 2's (SentencePiece, which puts its own
    space before the text) " yes" is two, and a profile file labelled "yes"
    and "no" fits instead."""
    path = os.path.join(os.path.dirname(MODEL), model)
    with Daemon("--http-listen", "127.0.0.1:0", model=path) as d:
        status, _, got = Http(d).rerank({"query": QUERY, "documents": DOCS[:1]})
    if fits:
        assert status == 200, got
        return
    assert status == 400 and http_error(got)[0] == "label_not_single_token", got
    assert '" yes" is 2 tokens' in got["error"]["message"], got
    profile = tmp_path / "llama2.json"
    profile.write_text(json.dumps({"template": "Query: {query}\nDocument: {document}\nIs the "
                                               "document relevant to the query? Answer:",
                                   "labels": ["yes", "no"]}))
    with Daemon("--http-listen", "127.0.0.1:0", "--rerank-profile", str(profile), model=path) as d:
        status, _, got = Http(d).rerank({"query": QUERY, "documents": DOCS[:1]})
    assert status == 200, got


@pytest.mark.parametrize("profile,message", [
    ({"template": "no placeholders", "labels": ["yes"]}, "must hold {query} and then {document}"),
    ({"template": "{document} before {query}", "labels": ["yes"]}, "and then {document}"),
    ({"template": "{query} {document} {query}", "labels": ["yes"]}, "each once"),
    ({"template": "{query} {document}"}, "a profile is"),
    ("not json", "not JSON"),
])
def test_bad_rerank_profile_files(tmp_path, profile, message):
    path = tmp_path / "profile.json"
    path.write_text(profile if isinstance(profile, str) else json.dumps(profile))
    r = subprocess.run([LMSCORED, "--model", MODEL, "--listen", "127.0.0.1:0", "--http-listen",
                        "127.0.0.1:0", "--rerank-profile", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and message in r.stderr and "listening" not in r.stderr, r.stderr


def test_a_rerank_profile_that_does_not_fit_the_model(tmp_path):
    """Labels that are not one token each stop the daemon once the model is
    loaded (a profile asked for by name must work)."""
    path = tmp_path / "profile.json"
    path.write_text(json.dumps({"template": "{query} {document}",
                                "labels": [" yes", " several words"]}))
    d = Daemon("--http-listen", "127.0.0.1:0", "--rerank-profile", str(path), wait_serving=False)
    try:
        assert d.proc.wait(180) == 1
    finally:
        d.stop(signal.SIGKILL)
    assert "the rerank profile does not fit the model" in d.log()
    assert "several words" in d.log(), d.log()


# --- errors ----------------------------------------------------------------

@pytest.fixture(scope="module")
def small():
    """A daemon with small limits, so that every limit is cheap to reach."""
    with Daemon("--http-listen", "127.0.0.1:0", "--max-items", "8", "--max-sequence-tokens",
                "32", "--max-message-bytes", "4096", "--max-text-bytes", "200") as d, \
            d.channel() as ch:
        yield Http(d), score_pb2_grpc.ScoreServiceStub(ch)


ERROR_CASES = {
    "empty_label_token_ids": both([1, 2, 3], [[4, 5]], []),
    "negative_token_id": both([1, -5], [[4, 5]], [6, 7]),
    "token_id_exceeds_vocab": both([1, 2, 3], [[4], [VOCAB]], [6, 7]),
    "label_over_vocab": both([1, 2, 3], [[4]], [6, VOCAB + 3]),
    "mixed_input_types": both("hello", [" a", [5]], [6]),
    "missing_input": both([1, 2, 3], [[4], None], [6]),
    "missing_field": both(None, [[4]], [6]),
    "empty_query": both([], [[]], [6]),
    "too_many_items": both([1, 2, 3], [[4]] * 9, [6]),
    "sequence_too_long": both([1, 2, 3], [[4], [5] * 40], [6]),
    "label_not_single_token": both("q", [" a"], [" yes", " several words here"]),
    "unknown_algorithm": both([1, 2, 3], [[4]], [6], algorithm="ALGORITHM_SERIAL"),
    "text_too_long": both("q", [" a", "b" * 201], [6]),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_grpc(small, case):
    api, stub = small
    body, req = ERROR_CASES[case]
    if case == "unknown_algorithm":
        body["algorithm"], req.algorithm = 17, 17
    if case == "missing_field":
        del body["query"]
        req.ClearField("query")
    with pytest.raises(grpc.RpcError) as e:
        stub.Score(req, timeout=60)
    info = error_info(e.value)
    status, _, got = api.score(body)
    assert status == 400, got
    assert http_error(got) == (info.reason, info.metadata["field"])
    assert got["error"]["status"] == "INVALID_ARGUMENT" and got["error"]["code"] == 400
    assert got["error"]["message"] == e.value.details()


BAD_BODIES = [
    (b"", "malformed_request", None),
    (b"{", "malformed_request", None),
    (b"[1, 2]", "malformed_request", None),
    (b'{"query": [1], "items": [[2]], "label_token_ids": [3]} x', "malformed_request", None),
    (b'{"query": 1, "items": [], "label_token_ids": [3]}', "malformed_request", "query"),
    (b'{"query": [1], "items": {}, "label_token_ids": [3]}', "malformed_request", "items"),
    (b'{"query": [1], "items": [[2, "x"]], "label_token_ids": [3]}', "malformed_request",
     "items[0][1]"),
    (b'{"query": [1], "items": [[2.5]], "label_token_ids": [3]}', "malformed_request",
     "items[0][0]"),
    (b'{"query": [1], "items": [[2]], "label_token_ids": [3e-1]}', "malformed_request",
     "label_token_ids[0]"),
    (b'{"query": [1], "items": [[2]], "label_token_ids": [4294967296]}', "malformed_request",
     "label_token_ids[0]"),
    (b'{"query": [1], "items": [[2]], "label_token_ids": [3], "apply_softmax": 1}',
     "malformed_request", "apply_softmax"),
    (b'{"query": [1], "query": [2], "items": [], "label_token_ids": [3]}', "malformed_request",
     "query"),
    (b'{"query": [1], "items": [[2]], "label_token_ids": [3], "algorithm": "FAST"}',
     "unknown_algorithm", "algorithm"),
    (b'{"query": "a", "items": ["b\\u0000c"], "label_token_ids": [3]}', "nul_in_text",
     "items[0]"),
    (b'{"query": "a\xff", "items": [], "label_token_ids": [3]}', "invalid_utf8", "query"),
    (b'{"query": "a", "items": ["\xc0\xaf"], "label_token_ids": [3]}', "invalid_utf8",
     "items[0]"),
    (b'{"query": "a", "items": ["\xed\xa0\x80"], "label_token_ids": [3]}', "invalid_utf8",
     "items[0]"),
    (b'{"query": "a", "items": ["\\ud800x"], "label_token_ids": [3]}', "invalid_utf8",
     "items[0]"),
    (b'{"query": "a", "items": [], "label_texts": ["\\udc00"]}', "invalid_utf8",
     "label_texts[0]"),
    (b'{"query": "a\nb", "items": [], "label_token_ids": [3]}', "malformed_request", "query"),
    (b'{"x": ' + b"[" * 40 + b"]" * 40 + b"}", "malformed_request", None),
]


@pytest.mark.parametrize("body,reason,field", BAD_BODIES)
def test_bad_bodies(small, body, reason, field):
    status, _, got = small[0].score(body)
    assert status == 400, got
    assert http_error(got) == (reason, field), got


def test_not_served(small):
    api = small[0]
    status, headers, got = api.score({"query": [1], "items": [], "label_token_ids": [3],
                                      "model": "gpt-4"})
    assert status == 404 and http_error(got) == ("unknown_model", "model"), got
    assert "tiny-qwen3" in got["error"]["message"]
    status, _, got = api.post("/v1/nothing", {})
    assert status == 404 and http_error(got) == ("not_found", None), got
    status, headers, got = api.post("/v1/score", b"", method="GET")
    assert status == 405 and headers["Allow"] == "POST", got
    assert http_error(got) == ("method_not_allowed", None)


def test_head_is_get_without_the_body(small):
    """RFC 9110 9.1: HEAD on every GET path is answered as GET, with its
    Content-Length and no body (the next answer on the connection follows
    the head at once); on a POST path it is 405."""
    for path in (b"/health", b"/v1/models", b"/openapi.json"):
        get = b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path
        with raw_request(small[0].port, get, timeout=30) as s:
            whole = read_until_close(s)
        body = whole.partition(b"\r\n\r\n")[2]
        with raw_request(small[0].port, get.replace(b"GET", b"HEAD").replace(
                b"Connection: close\r\n", b"") + get, timeout=30) as s:
            got = read_until_close(s)
        head, _, rest = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 "), got
        assert b"\r\nContent-Length: %d\r\n" % len(body) in head, (head, len(body))
        assert rest.startswith(b"HTTP/1.1 200 "), rest[:200]  # no body between
    status, headers, got = small[0].post("/v1/score", b"", method="HEAD")
    assert status == 405 and headers["Allow"] == "POST", (status, headers)


SMUGGLING = {
    "repeated_content_length": (b"Content-Length: %d\r\nContent-Length: 5\r\n", 400,
                                "malformed_request"),
    "equal_content_lengths": (b"Content-Length: %d\r\nContent-Length: %d\r\n", 400,
                              "malformed_request"),
    "content_length_list": (b"Content-Length: %d, %d\r\n", 400, "malformed_request"),
    "content_length_and_chunked": (b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n",
                                   400, "malformed_request"),
    # RFC 9112 6.1: a coding the server does not know is 501
    "unknown_transfer_coding": (b"Transfer-Encoding: gzip, chunked\r\nX-Length: %d\r\n", 501,
                                "unsupported_transfer_coding"),
    # 6.3: chunked not the final coding is 400
    "identity_transfer_coding": (b"Transfer-Encoding: identity\r\nX-Length: %d\r\n", 400,
                                 "malformed_request"),
    "chunked_twice": (b"Transfer-Encoding: chunked, chunked\r\nX-Length: %d\r\n", 400,
                      "malformed_request"),
    # an empty Transfer-Encoding is there all the same: not chunked, so 400
    "empty_transfer_encoding_and_length": (b"Transfer-Encoding: ,\r\nContent-Length: %d\r\n",
                                           400, "malformed_request"),
    "empty_transfer_encoding": (b"Transfer-Encoding:\r\nX-Length: %d\r\n", 400,
                                "malformed_request"),
    "tab_transfer_encoding": (b"Transfer-Encoding:\t\r\nX-Length: %d\r\n", 400,
                              "malformed_request"),
}


def refused_once(port, data, status):
    """Sends data on a new connection and reads until the server closes it:
    one answer (its status line once), status, in the documented JSON form,
    with Connection: close. Returns what came back and the error object."""
    s = raw_request(port, data, timeout=30)
    try:
        got = read_until_close(s)
    finally:
        s.close()
    assert len(re.findall(rb"(?:^|\n)HTTP/1\.1 \d\d\d ", got)) == 1, got  # one status line
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status) and b"\r\nConnection: close" in head, got
    assert b"Content-Type: application/json" in head, got
    error = json.loads(body)
    assert error["error"]["code"] == status, error
    return got, error


@pytest.mark.parametrize("case", list(SMUGGLING))
def test_ambiguous_framing_is_refused_and_the_connection_closed(small, case):
    """RFC 9112: several Content-Length headers, Content-Length beside
    Transfer-Encoding, or a coding other than chunked leave where the
    request ends in doubt; the answer is 400 malformed_request as JSON (501
    unsupported_transfer_coding for a coding before chunked), and the
    connection closes after it, so that no rest of the body is read as a
    request of its own."""
    api = small[0]
    body = b'{"query": [1], "items": [[2]], "label_token_ids": [3]}'
    second = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body), body)
    fields, status, reason = SMUGGLING[case]
    head = (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
            fields.replace(b"%d", b"%d" % len(body)) + b"\r\n")
    data, error = refused_once(api.port, head + body + second, status)
    assert data.count(b"HTTP/1.1 ") == 1, data  # one answer, then the close
    assert http_error(error) == (reason, None), error
    assert "RFC 9112" in error["error"]["message"], error


HEAD_LIMITS = {
    "uri_too_long": (b"POST /v1/" + b"a" * 9000 + b"?x=1 HTTP/1.1\r\nHost: x\r\n", 414),
    "headers_too_large": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\n" +
                          b"X-Pad: %s\r\n" % (b"p" * 1000) * 17, 431),
}


@pytest.mark.parametrize("case", list(HEAD_LIMITS))
def test_a_head_past_its_limits_is_refused_as_json(small, case):
    """A request target past 8 KiB is 414, header fields past 16 KiB 431,
    in the documented JSON form, once, and the connection closes
    (libmicrohttpd answered both with an HTML page of its own)."""
    head, status = HEAD_LIMITS[case]
    data, error = refused_once(small[0].port, head + b"Content-Length: 2\r\n\r\n{}", status)
    assert data.count(b"HTTP/1.1 ") == 1, data
    assert http_error(error) == (case, None), error


ONE_ITEM = b'{"query": [1], "items": [[2]], "label_token_ids": [3]}'


CHUNKED_HEAD = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
# What the HTTP parser refuses (RFC 9112), each answered once in the
# documented JSON form and the connection closed: bytes, status, reason.
PARSER_ERRORS = {
    "garbage_request_line": (b"GARBAGE\r\n\r\n", 400, "malformed_request"),
    "garbage_without_a_line_end": (b"GAR\x01BAGE", 400, "malformed_request"),
    "asterisk_form_target": (b"POST * HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed_request"),
    "absolute_form_of_another_scheme": (b"POST ftp://x/v1/score HTTP/1.1\r\nHost: x\r\n\r\n",
                                        400, "malformed_request"),
    "http_2_0": (b"POST /v1/score HTTP/2.0\r\nHost: x\r\n\r\n", 505,
                 "http_version_not_supported"),
    "http_0_9": (b"POST /v1/score HTTP/0.9\r\nHost: x\r\n\r\n", 505,
                 "http_version_not_supported"),
    "not_a_version": (b"POST /v1/score HTTP/1.1x\r\nHost: x\r\n\r\n", 400,
                      "malformed_request"),
    "no_host_on_1_1": (b"POST /v1/score HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 400,
                       "malformed_request"),
    "two_hosts": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400,
                  "malformed_request"),
    "space_before_colon": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\n{}",
                           400, "malformed_request"),
    "obs_fold": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n", 400,
                 "malformed_request"),
    "bare_lf": (b"POST /v1/score HTTP/1.1\nHost: x\n\n", 400, "malformed_request"),
    "bad_content_length": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 2x\r\n\r\n{}",
                           400, "malformed_request"),
    "signed_content_length": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}",
                              400, "malformed_request"),
    "transfer_encoding_on_1_0": (b"POST /v1/score HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 b"2\r\n{}\r\n0\r\n\r\n", 400, "malformed_request"),
    "nul_in_request_id": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nX-Request-Id: abcd\x00efgh\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (len(ONE_ITEM), ONE_ITEM), 400,
                          "malformed_request"),
    "cr_in_a_value": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400,
                      "malformed_request"),
    "head_past_64_kib": (b"POST /v1/score HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * (70 << 10) +
                         b"\r\n\r\n", 431, "headers_too_large"),
    "bad_chunk_size": (CHUNKED_HEAD + b"zz\r\n{}\r\n0\r\n\r\n", 400, "malformed_request"),
    "chunk_size_past_2_60": (CHUNKED_HEAD + b"1" + b"0" * 16 + b"\r\n{}\r\n0\r\n\r\n", 400,
                             "malformed_request"),
    "chunk_without_crlf": (CHUNKED_HEAD + b"2\r\n{}xx0\r\n\r\n", 400, "malformed_request"),
    # past --max-message-bytes (4096), its end in the same read: closed all
    # the same, so the request after it is not read
    "chunked_past_the_limit_whole": (
        CHUNKED_HEAD + b"1770\r\n" + b" " * 6000 + b"\r\n0\r\n\r\n" +
        b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 413, "message_too_large"),
}


@pytest.mark.parametrize("case", list(PARSER_ERRORS))
def test_the_parser_refusals_are_json_once_and_close(small, case):
    """Each request the HTTP parser refuses gets one answer (its status line
    once), in the documented JSON form, with Connection: close, and the
    connection closes (libmicrohttpd answered these with HTML pages, the
    status line of a bad Content-Length twice, closed a garbage line
    unanswered and cut a header value at a NUL). A NUL in a header value is
    refused, never cut."""
    data, status, reason = PARSER_ERRORS[case]
    _, error = refused_once(small[0].port, data, status)
    assert http_error(error) == (reason, None), error


def test_what_the_parser_takes(small):
    """The other side of the refusals: HTTP/1.0, chunk extensions and
    trailers, an empty line before the request, optional whitespace around
    a value, an absolute-form target (RFC 9112 3.2.2), HTTP/1.2 (served as
    1.1: RFC 9110 2.5) and Expect: 100-continue are served."""
    body = ONE_ITEM
    chunked = (b"%x;ext=1\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (len(body), body))
    requests = [
        b"POST /v1/score HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
        b"\r\nPOST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + chunked,
        b"POST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Content-Length:   %d  \r\n\r\n%s" % (len(body), body),
        b"POST http://x/v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body),
        b"POST HTTPS://x:8080/v1/score?q=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body),
        b"POST /v1/score HTTP/1.2\r\nHost: x\r\nConnection: close\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body),
    ]
    for data in requests:
        s = raw_request(small[0].port, data, timeout=30)
        try:
            got = read_until_close(s)
        finally:
            s.close()
        assert got.startswith(b"HTTP/1.1 200 ") and got.count(b"HTTP/1.1 ") == 1, got
    s = raw_request(small[0].port, b"POST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                   b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body),
                    timeout=30)
    try:
        interim = s.recv(4096)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
        s.sendall(body)
        got = read_until_close(s)
    finally:
        s.close()
    assert got.startswith(b"HTTP/1.1 200 "), got


def test_pipelined_requests_are_answered_in_order(small):
    """Requests sent together on one connection are answered one after the
    other, in the order sent, each with its own request id."""
    data = b"".join(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nX-Request-Id: pipelined-%d\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (i, len(ONE_ITEM), ONE_ITEM)
                    for i in range(5))
    data += b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    s = raw_request(small[0].port, data, timeout=60)
    try:
        got = read_until_close(s)
    finally:
        s.close()
    ids = [line.split(b": ")[1] for line in got.split(b"\r\n") if line.startswith(b"x-request-id")]
    assert ids[:5] == [b"pipelined-%d" % i for i in range(5)], got
    assert got.count(b"HTTP/1.1 200 ") == 6, got


def test_only_json_bodies_are_read(small):
    """A Content-Type other than JSON is refused 415 (the message says what
    is taken); application/json with parameters, or none, is read."""
    api = small[0]
    body = {"query": [1], "items": [[2]], "label_token_ids": [3]}
    for content_type in ("text/plain", "application/x-www-form-urlencoded",
                         "application/jsonx"):
        status, _, got = api.score(body, headers={"Content-Type": content_type})
        assert status == 415 and http_error(got) == ("unsupported_media_type", None), got
        assert "application/json" in got["error"]["message"]
    for content_type in ("application/json; charset=utf-8", "Application/JSON"):
        status, _, got = api.score(body, headers={"Content-Type": content_type})
        assert status == 200, got
    conn = api.connection()
    try:
        conn.putrequest("POST", "/v1/score", skip_accept_encoding=True)
        data = json.dumps(body).encode()
        conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_size_limits(small):
    api = small[0]
    status, _, got = api.score(b" " * 5000)
    assert status == 413 and http_error(got) == ("message_too_large", None), got
    assert "5000" in got["error"]["message"]
    # an answer over the limit: 8 items of 300 scores each
    status, _, got = api.score({"query": [1], "items": [[2]] * 8, "label_token_ids": [3] * 300})
    assert status == 413 and http_error(got) == ("response_too_large", None), got


def test_rerank_errors(small):
    api = small[0]
    cases = [
        ({"query": "q", "documents": ["d"] * 9}, 400, "too_many_items", "documents"),
        ({"query": "q", "documents": ["d", "word " * 20]}, 400, "sequence_too_long",
         "documents[1]"),
        ({"query": "q", "documents": ["d", "x" * 300]}, 400, "text_too_long", "documents[1]"),
        ({"documents": ["d"]}, 400, "missing_field", "query"),
        ({"query": "q"}, 400, "missing_field", "documents"),
        ({"query": "q", "documents": [1]}, 400, "malformed_request", "documents[0]"),
        ({"query": "q", "documents": [{"title": "t"}]}, 400, "missing_field", "documents[0].text"),
        ({"query": "q", "documents": ["d"], "top_n": -1}, 400, "malformed_request", "top_n"),
        ({"query": "q", "documents": ["d"], "model": "other"}, 404, "unknown_model", "model"),
    ]
    for body, status, reason, field in cases:
        got_status, _, got = api.rerank(body)
        assert (got_status, http_error(got)) == (status, (reason, field)), (body, got)
    for body in [{"query": "q", "documents": ["d"] * 9},
                 {"query": "q", "documents": ["d", "word " * 20]}]:
        message = api.rerank(body)[2]["error"]["message"]
        assert "documents" in message and "items" not in message, message


def test_queue_loading_and_drain():
    """503 not_ready while the model loads; 429 queue_full (with
    Retry-After) when the queue is full; during the drain the running call
    is answered and a new one refused 503 draining."""
    env = {"LMSCORE_TEST_STALL_WORKER_MS": "4000", "LMSCORE_TEST_LOAD_DELAY_MS": "3000"}
    body = {"query": [1, 2], "items": [[3]], "label_token_ids": [4]}
    d = Daemon("--http-listen", "127.0.0.1:0", "--workers", "1", "--queue-depth", "1",
               binary=LMSCORED_TEST_HOOKS, env=env, wait_serving=False)
    try:
        api = Http(d)
        status, headers, got = api.score(body)
        assert status == 503 and http_error(got) == ("not_ready", None), got
        assert headers["Retry-After"] == "1"
        status, headers, got = api.post("/health", b"", method="GET")
        assert status == 503 and http_error(got) == ("not_ready", None), got
        assert headers["Retry-After"] == "1"
        d.wait_serving()
        assert api.post("/health", b"", method="GET")[:3:2] == (200, {"status": "SERVING"})
        results = []
        threads = [threading.Thread(target=lambda: results.append(api.score(body)))
                   for _ in range(4)]
        for t in threads:
            t.start()
            time.sleep(0.05)
        for t in threads:
            t.join(120)
        codes = sorted(s for s, _, _ in results)
        assert codes.count(200) >= 1 and codes.count(429) >= 2, codes
        for s, headers, got in results:
            if s == 429:
                assert http_error(got) == ("queue_full", None) and headers["Retry-After"] == "1"
        d.wait_idle()

        running = []
        t = threading.Thread(target=lambda: running.append(api.score(body)))
        t.start()
        d.wait_jobs(1)
        d.proc.send_signal(signal.SIGTERM)
        d.wait_for_log(r"signal received: draining", 60)
        status, headers, got = api.score(body)
        assert status == 503 and http_error(got) == ("draining", None), got
        status, _, got = api.post("/health", b"", method="GET")
        assert status == 503 and http_error(got) == ("draining", None), got
        # no client sends its next request on a connection of a server
        # that is going away
        assert headers["Connection"] == "close", headers
        t.join(120)
        assert running and running[0][0] == 200, running
        assert d.stop() == 0
    finally:
        d.stop(signal.SIGKILL)


# --- bodies and memory -----------------------------------------------------

def raw_request(port, head, timeout=60):
    return raw_connect(port, head, timeout=timeout)


def read_response(s):
    """(status, body) of the response on s, which the server then closes."""
    head, _, body = read_until_close(s).partition(b"\r\n\r\n")
    if not head:
        raise ConnectionResetError("the server closed the connection without an answer")
    return int(head.split()[1]), json.loads(body) if body else None


@pytest.fixture(scope="module")
def bounded():
    with Daemon("--http-listen", "127.0.0.1:0", "--max-message-bytes", "8M",
                "--max-receive-buffer", "16M", "--metrics-listen", "127.0.0.1:0",
                env=steady_memory_env()) as d:
        yield d, Http(d)


def test_a_huge_announced_body_is_refused_unread(bounded):
    d, api = bounded
    base = d.rss_kb()
    t0 = time.monotonic()
    s = raw_request(api.port, b"POST /v1/score HTTP/1.1\r\nHost: x\r\n"
                              b"Content-Length: 1073741824\r\n\r\n")
    status, got = read_response(s)
    s.close()
    assert status == 413 and http_error(got) == ("message_too_large", None), got
    assert "1073741824" in got["error"]["message"]
    assert time.monotonic() - t0 < 30
    assert d.rss_kb() - base < 8 << 10


def test_a_chunked_body_past_the_limit_is_cut_off(bounded):
    """A body of no announced size is refused as it passes the limit: the
    server answers 413 and closes the connection, so a client still sending
    may see the connection reset before it reads the answer; either way
    the daemon held no more than the limit, and counts the refusal."""
    d, api = bounded
    before = Metrics(d).scrape()
    sampler = RssSampler(d, period=0.02)
    base = d.rss_kb()
    s = raw_request(api.port, b"POST /v1/score HTTP/1.1\r\nHost: x\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n")
    piece = b"1000\r\n" + b" " * 4096 + b"\r\n"
    sent = 0
    try:
        while sent < 256 << 20:
            s.sendall(piece * 64)
            sent += 4096 * 64
        outcome = read_response(s)
    except OSError:
        outcome = "reset"
    s.close()
    sampler.stop()
    assert outcome == "reset" or (outcome[0] == 413 and
                                  http_error(outcome[1]) == ("message_too_large", None)), outcome
    assert sent < 64 << 20, sent
    assert (sampler.max_kb() - base) / 1024 < 8 + 24
    after = Metrics(d).scrape()
    assert value(after, "lmscore_errors_total", reason="message_too_large",
                 code="RESOURCE_EXHAUSTED") == value(before, "lmscore_errors_total",
                                                     reason="message_too_large",
                                                     code="RESOURCE_EXHAUSTED") + 1


def still_unanswered(s):
    """Whether the server has neither answered on s nor closed it."""
    s.setblocking(False)
    try:
        s.recv(1, socket.MSG_PEEK)  # an answer, or b"": closed
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


def test_bodies_announced_huge_hold_only_what_arrived(bounded):
    """A body holds the receive budget for the bytes that have arrived, not
    for its Content-Length: four clients that announce 8 MB each (twice
    --max-receive-buffer together) and trickle it shut no POST out."""
    d, api = bounded
    head = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\n"
    slow = [raw_request(api.port, head + b" " * 1000) for _ in range(4)]
    try:
        time.sleep(0.3)
        status, _, got = api.score({"query": [1], "items": [[2]], "label_token_ids": [3]})
        assert status == 200, got
        assert all(still_unanswered(s) for s in slow)
    finally:
        for s in slow:
            s.close()


def test_the_slowest_body_readers_make_room(bounded):
    """When the bodies arriving hold all of --max-receive-buffer, the
    slowest of them (fewest bytes a second since it began) is closed for a
    faster one, which is served; memory stays within the budget."""
    d, api = bounded
    body = json.dumps({"query": [1], "items": [[2]], "label_token_ids": [3],
                       "pad": " " * (6 << 20)}).encode()
    sampler = RssSampler(d, period=0.05)
    base = d.rss_kb()
    head = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    # 6 MB each of 16M, the rest never sent: the first stalls longest
    slow = []
    for _ in range(2):
        slow.append(raw_request(api.port, head + body[:-1]))
        time.sleep(0.5)
    try:
        fast = raw_request(api.port, head + body)
        status, got = read_response_keepalive(fast)
        fast.close()
        sampler.stop()
        assert status == 200, got
        assert not still_unanswered(slow[0])  # closed for the fast one
        assert read_until_close(slow[0]) == b""  # unanswered
        assert still_unanswered(slow[1])
        slow[1].sendall(body[-1:])
        status, got = read_response_keepalive(slow[1])
        assert status == 200, got
    finally:
        sampler.stop()
        for s in slow:
            s.close()
    assert (sampler.max_kb() - base) / 1024 < 16 + 2 * 8 + 32


def read_response_keepalive(s):
    """(status, body) of one response with a Content-Length, the connection
    left open."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int([line.split(b":")[1] for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length")][0])
    while len(body) < length:
        body += s.recv(65536)
    return int(head.split()[1]), json.loads(body)


def test_a_body_that_decodes_huge_is_refused(bounded):
    """8 MB of empty items (2.7 million structs once read) is refused with
    message_too_large when its decoding passes 64 MiB."""
    d, api = bounded
    sampler = RssSampler(d, period=0.02)
    base = d.rss_kb()
    n = (8 << 20) // 3 - 100
    body = b'{"query": [1], "label_token_ids": [3], "items": [' + b"[]," * (n - 1) + b"[]]}"
    status, _, got = api.score(body)
    sampler.stop()
    assert status == 413 and http_error(got) == ("message_too_large", None), got
    assert (sampler.max_kb() - base) / 1024 < 64 + 2 * 8 + 32


def test_a_client_that_hangs_up_cancels_its_call():
    with Daemon("--http-listen", "127.0.0.1:0", "--max-items", "100000",
                "--metrics-listen", "127.0.0.1:0") as d:
        api = Http(d)
        s = start_long_score(api.port)
        d.wait_jobs(1)
        t0 = time.monotonic()
        s.close()
        d.wait_idle(timeout=30)
        assert time.monotonic() - t0 < 20
        scrape = Metrics(d).scrape()
        assert value(scrape, "lmscore_requests_total", service="http", method="score",
                     code="CANCELLED") == 1
        assert value(scrape, "lmscore_items_scored_total") < 3000
