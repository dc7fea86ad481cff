"""What the clients people run expect of the HTTP API besides scoring: a
wrong model names every served one; GET /v1/models/{id} (OpenAI's
models.retrieve); Cohere v1's answer carries id and meta.billed_units; v1
rank_fields scores the named members of a document object, joined as
"name: value" lines, and answers the object as it came.
"""
import struct

import pytest

from harness import Daemon, Http, http_error, text
from lmscore.v1 import score_pb2, score_pb2_grpc

YES, NO = 9834, 902  # " yes", " no" in the demo model's tokenizer
QUERY = "What is the capital of France?"


def bits(x):
    return struct.pack("<f", x)


@pytest.fixture(scope="module")
def daemon():
    with Daemon("--http-listen", "127.0.0.1:0", "--prefix-cache-bytes", "0",
                "--served-model-name", "alpha,rerank-v3.5,b/c") as d, d.channel() as ch:
        yield Http(d), score_pb2_grpc.ScoreServiceStub(ch)


def test_a_wrong_model_names_every_served_one(daemon):
    api, _ = daemon
    for path, body in [("/v1/score", {"query": [1], "items": [[2]], "label_token_ids": [3]}),
                       ("/v2/rerank", {"query": "q", "documents": ["d"]})]:
        status, _, got = api.post(path, dict(body, model="nope"))
        assert status == 404 and http_error(got) == ("unknown_model", "model"), got
        message = got["error"]["message"]
        for name in ("alpha", "rerank-v3.5", "b/c", "nope"):
            assert f'"{name}"' in message, message


def test_get_a_model(daemon):
    api, _ = daemon
    status, _, listed = api.post("/v1/models", b"", method="GET")
    assert status == 200, listed
    for entry in listed["data"]:
        for path in (entry["id"], entry["id"].replace("/", "%2F").replace(".", "%2e")):
            status, _, got = api.post("/v1/models/" + path, b"", method="GET")
            assert (status, got) == (200, entry), (path, got)
    for bad in ("nope", "alph", "alpha%", "%00", "alpha%2"):
        status, _, got = api.post("/v1/models/" + bad, b"", method="GET")
        assert status == 404 and http_error(got) == ("unknown_model", "model"), (bad, got)
        assert '"rerank-v3.5"' in got["error"]["message"]
    status, _, got = api.post("/v1/models/alpha", {})
    assert status == 405 and http_error(got) == ("method_not_allowed", None), got


def yes_no(stub, docs):
    req = score_pb2.ScoreRequest(
        query=text(f"Query: {QUERY}\nDocument:"),
        items=[text(f" {d}\nIs the document relevant to the query? Answer:") for d in docs],
        label_token_ids=[YES, NO], apply_softmax=True)
    return [it.scores[0] for it in stub.Score(req, timeout=120).items]


def test_cohere_v1_id_and_meta(daemon):
    api, _ = daemon
    docs = [f"document {i}" for i in range(101)]
    status, headers, got = api.rerank({"query": QUERY, "documents": docs, "top_n": 1})
    assert status == 200, got
    assert got["id"] == headers["x-request-id"]
    assert got["meta"] == {"api_version": {"version": "1"}, "billed_units": {"search_units": 2}}
    status, _, got = api.rerank({"query": QUERY, "documents": docs[:3]})
    assert got["meta"]["billed_units"] == {"search_units": 1}
    assert list(got) == ["id", "model", "results", "meta", "usage"]


def test_rank_fields(daemon):
    api, stub = daemon
    docs = [{"title": "Paris", "text": "The capital of France.", "id": 7},
            {"text": "Bananas are yellow.", "title": "Fruit"},
            "a plain string"]
    body = {"query": QUERY, "documents": docs, "rank_fields": ["title", "text"]}
    status, _, got = api.rerank(body)
    assert status == 200, got
    want = yes_no(stub, ["title: Paris\ntext: The capital of France.",
                         "title: Fruit\ntext: Bananas are yellow.", "a plain string"])
    for r in got["results"]:
        assert bits(r["relevance_score"]) == bits(want[r["index"]])
        assert r["document"] == (docs[r["index"]] if r["index"] < 2
                                 else {"text": "a plain string"})
    # rank_fields may come first, name one member, or a member some lack
    status, _, got = api.rerank({"rank_fields": ["title"], "query": QUERY, "documents": docs})
    assert status == 200, got
    want = yes_no(stub, ["title: Paris", "title: Fruit", "a plain string"])
    assert {r["index"]: bits(r["relevance_score"]) for r in got["results"]} == \
        {i: bits(w) for i, w in enumerate(want)}
    # without rank_fields, the text member alone, as before
    status, _, got = api.rerank({"query": QUERY, "documents": docs[:2]})
    want = yes_no(stub, ["The capital of France.", "Bananas are yellow."])
    assert {r["index"]: bits(r["relevance_score"]) for r in got["results"]} == \
        {i: bits(w) for i, w in enumerate(want)}
    for body, reason, field in [
            ({"documents": [{"title": "t"}], "rank_fields": ["author"]}, "missing_field",
             "documents[0].author"),
            ({"documents": [{"title": 3}], "rank_fields": ["title"]}, "malformed_request",
             "documents[0].title"),
            ({"documents": [{"title": "t"}], "rank_fields": "title"}, "malformed_request",
             "rank_fields"),
            ({"documents": [{"title": "t"}]}, "missing_field", "documents[0].text")]:
        status, _, got = api.rerank(dict(body, query=QUERY))
        assert status == 400 and http_error(got) == (reason, field), (body, got)


ORIGIN = "https://app.example.com"


def test_cors(tmp_path):
    """--http-cors-allow-origin: an allowed origin is echoed on every
    answer (errors too) and its preflight answered without the API key;
    another origin, or a server without the flag, gets no CORS at all."""
    keys = tmp_path / "keys"
    keys.write_text("k1\n")
    preflight = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"}
    with Daemon("--http-listen", "127.0.0.1:0", "--api-key-file", str(keys),
                "--http-cors-allow-origin", f"https://other.example,{ORIGIN}") as d:
        api = Http(d)
        status, headers, got = api.post("/v2/rerank", b"", method="OPTIONS", headers=preflight)
        assert status == 200 and got is None, got
        assert headers["Access-Control-Allow-Origin"] == ORIGIN
        assert headers["Vary"] == "Origin"
        assert "POST" in headers["Access-Control-Allow-Methods"]
        allowed = headers["Access-Control-Allow-Headers"].replace(" ", "").split(",")
        assert {"authorization", "content-type"} <= set(allowed)
        status, _, _ = api.post("/v1/models", b"", method="OPTIONS", headers=preflight)
        assert status == 200
        body = {"query": "q", "documents": ["d"]}
        auth = {"Origin": ORIGIN, "Authorization": "Bearer k1"}
        status, headers, got = api.post("/v2/rerank", body, headers=auth)
        assert status == 200 and headers["Access-Control-Allow-Origin"] == ORIGIN, got
        assert "x-request-id" in headers["Access-Control-Expose-Headers"]
        status, headers, _ = api.post("/v2/rerank", body, headers={"Origin": ORIGIN})
        assert status == 401 and headers["Access-Control-Allow-Origin"] == ORIGIN
        for origin in ("https://evil.example", "https://app.example.com.evil", "null"):
            status, headers, got = api.post("/v2/rerank", b"", method="OPTIONS",
                                            headers=dict(preflight, Origin=origin))
            # not a preflight here: the key is asked for first, as for any call
            assert status == 401 and "Access-Control-Allow-Origin" not in headers, got
            status, headers, _ = api.post("/v2/rerank", body,
                                          headers=dict(auth, Origin=origin))
            assert status == 200 and "Access-Control-Allow-Origin" not in headers
    with Daemon("--http-listen", "127.0.0.1:0", "--http-cors-allow-origin", "*") as d:
        api = Http(d)
        for origin in (ORIGIN, "https://anyone.example"):
            status, headers, _ = api.post("/v1/score", b"", method="OPTIONS",
                                          headers=dict(preflight, Origin=origin))
            assert status == 200 and headers["Access-Control-Allow-Origin"] == origin
        status, headers, _ = api.post("/v1/score", b"", method="OPTIONS",
                                      headers={"Access-Control-Request-Method": "POST"})
        assert status == 405 and "Access-Control-Allow-Origin" not in headers
    with Daemon("--http-listen", "127.0.0.1:0") as d:
        api = Http(d)
        status, headers, _ = api.post("/v2/rerank", b"", method="OPTIONS", headers=preflight)
        assert status == 405 and "Access-Control-Allow-Origin" not in headers
        status, headers, _ = api.post("/v2/rerank", {"query": "q", "documents": ["d"]},
                                      headers={"Origin": ORIGIN})
        assert status == 200 and "Access-Control-Allow-Origin" not in headers
