"""Rerank truncation: a document longer than its budget is cut inside its own
tokens and the template's tail (where the label is read) is kept, token for
token that of a document that needed no cut. A 5,000-word document ranks on
every rerank path that asks for (or defaults to) truncation; Cohere v2's
max_tokens_per_doc, TEI's truncate and truncation_direction ("Left" keeps the
end, "Right" the start, anything else 422), vLLM's truncate_prompt_tokens and
the server's --truncate-documents each cut to the right tokens, checked by
scoring the expected token sequence over gRPC and comparing the bits. The
answer says what was cut, and lmscore_truncated_items_total counts it. The
Score API cuts only when asked. The Rerank RPC answers the HTTP paths'
numbers, bit for bit, with the same cuts.
"""
import json
import struct

import grpc
import pytest

from harness import Daemon, Http, Metrics, error_info, http_error, text, tokens, value
from lmscore.v1 import score_pb2, score_pb2_grpc

YES, NO = 9834, 902  # " yes", " no" in the demo model's tokenizer
HEAD, MIDDLE, LEAD = "Query: ", "\nDocument:", " "
TAIL = "\nIs the document relevant to the query? Answer:"
QUERY = "What is the capital of France?"
SHORT = "Paris is the capital of France."
WORDS = ["alpha", "beta", "gamma", "delta", "Paris", "river", "stone", "light"]
LONG = " ".join(WORDS[i % len(WORDS)] + str(i) for i in range(5000))  # 5,000 words
MEDIUM = " ".join(WORDS[i % len(WORDS)] + str(i) for i in range(60))
SEQ_LIMIT = 96


def bits(x):
    return struct.pack("<f", x)


@pytest.fixture(scope="module")
def daemon():
    with Daemon("--http-listen", "127.0.0.1:0", "--prefix-cache-bytes", "0",
                "--metrics-listen", "127.0.0.1:0") as d, d.channel() as ch:
        yield d, Http(d), score_pb2_grpc.ScoreServiceStub(ch)


@pytest.fixture(scope="module")
def small():
    """A short sequence limit, so that a cut is cheap to reach."""
    with Daemon("--http-listen", "127.0.0.1:0", "--prefix-cache-bytes", "0",
                "--max-sequence-tokens", str(SEQ_LIMIT)) as d, d.channel() as ch:
        yield Http(d), score_pb2_grpc.ScoreServiceStub(ch)


def tokenize(stub, s, special=False):
    return list(stub.Tokenize(score_pb2.TokenizeRequest(text=s, add_special_tokens=special),
                              timeout=60).token_ids)


def relevance(stub, doc_ids):
    """The yes-no relevance of a document given as the item's tokens (the
    lead space's included), followed by the tail's own tokens."""
    query = tokenize(stub, HEAD + QUERY + MIDDLE, special=True)
    req = score_pb2.ScoreRequest(query=tokens(query), items=[tokens(doc_ids)],
                                 label_token_ids=[YES, NO], apply_softmax=True)
    return stub.Score(req, timeout=300).items[0].scores[0]


def test_the_tail_is_a_seam(daemon):
    """What a cut document ends with: the tail's own tokens, which are the
    last tokens of a short document's prompt item too, bit for bit, where
    the tokenizer merges nothing across the seam (a document ending in a
    word). A document ending in punctuation merges it with the tail's
    newline (".\n" is one token): uncut, it is scored as that one text."""
    _, _, stub = daemon
    tail = tokenize(stub, TAIL)
    for doc in (SHORT[:-1], MEDIUM):
        whole = tokenize(stub, LEAD + doc + TAIL)
        assert whole[-len(tail):] == tail
        assert whole[:-len(tail)] == tokenize(stub, LEAD + doc)
    assert tokenize(stub, LEAD + SHORT + TAIL)[-len(tail):] != tail


def test_a_5000_word_document_ranks(daemon):
    d, api, stub = daemon
    metrics = Metrics(d)
    before = value(metrics.scrape(), "lmscore_truncated_items_total")
    docs = [SHORT, LONG]
    status, _, got = api.post("/v2/rerank", {"model": "tiny-qwen3", "query": QUERY,
                                             "documents": docs})
    assert status == 200, got
    assert sorted(r["index"] for r in got["results"]) == [0, 1]
    (cut,) = got["meta"]["truncated_documents"]
    n_long = len(tokenize(stub, LEAD + LONG))
    limit = 4096  # the demo model's context length
    room = limit - len(tokenize(stub, HEAD + QUERY + MIDDLE, True)) - len(tokenize(stub, TAIL))
    assert cut == {"index": 1, "tokens_kept": room, "tokens_dropped": n_long - room}
    want = relevance(stub, tokenize(stub, LEAD + LONG)[:room] + tokenize(stub, TAIL))
    by_index = {r["index"]: r["relevance_score"] for r in got["results"]}
    assert bits(by_index[1]) == bits(want)
    # the short document is scored as it always was, untouched
    assert bits(by_index[0]) == bits(relevance(stub, tokenize(stub, LEAD + SHORT + TAIL)))
    assert value(metrics.scrape(), "lmscore_truncated_items_total") == before + 1
    # /v1/rerank without truncation asked (the server's default is off) refuses it
    status, _, err = api.rerank({"query": QUERY, "documents": docs})
    assert status == 400 and http_error(err) == ("sequence_too_long", "documents[1]"), err


@pytest.mark.parametrize("path,body,keep_end", [
    ("/v2/rerank", {"max_tokens_per_doc": 20}, False),
    ("/rerank", {"truncate": True}, False),
    ("/rerank", {"truncate": True, "truncation_direction": "Right"}, False),
    ("/rerank", {"truncate": True, "truncation_direction": "Left"}, True),
    ("/v1/rerank", {"truncate_prompt_tokens": 80}, False),
    ("/v1/rerank", {"truncate_prompt_tokens": -1}, False),
])
def test_the_cut_keeps_the_tail_and_the_right_end(small, path, body, keep_end):
    api, stub = small
    docs = [SHORT, MEDIUM]
    key = "texts" if path == "/rerank" else "documents"
    status, _, got = api.post(path, {"query": QUERY, key: docs, **body})
    assert status == 200, got
    doc = tokenize(stub, LEAD + MEDIUM)
    tail = tokenize(stub, TAIL)
    query = tokenize(stub, HEAD + QUERY + MIDDLE, True)
    limit = body.get("truncate_prompt_tokens", SEQ_LIMIT)
    limit = SEQ_LIMIT if limit < 0 else limit
    room = min(body.get("max_tokens_per_doc", limit), limit - len(query) - len(tail))
    assert 0 < room < len(doc)
    kept = doc[-room:] if keep_end else doc[:room]
    want = relevance(stub, kept + tail)
    if path == "/rerank":
        by_index = {r["index"]: r for r in got}
        assert bits(by_index[1]["score"]) == bits(want)
        assert (by_index[1]["tokens_kept"], by_index[1]["tokens_dropped"]) == \
            (room, len(doc) - room)
        assert "tokens_dropped" not in by_index[0]
    else:
        by_index = {r["index"]: r["relevance_score"] for r in got["results"]}
        assert bits(by_index[1]) == bits(want)
        assert got["meta"]["truncated_documents"] == [
            {"index": 1, "tokens_kept": room, "tokens_dropped": len(doc) - room}]
    # the other end would score otherwise: the test tells the ends apart
    other = doc[:room] if keep_end else doc[-room:]
    assert bits(relevance(stub, other + tail)) != bits(want)


def test_left_and_right_differ_and_false_refuses(small):
    api, _ = small
    body = {"query": QUERY, "texts": [MEDIUM], "truncate": True}
    left = api.post("/rerank", dict(body, truncation_direction="Left"))[2]
    right = api.post("/rerank", dict(body, truncation_direction="Right"))[2]
    assert bits(left[0]["score"]) != bits(right[0]["score"])
    status, _, err = api.post("/rerank", dict(body, truncate=False))
    assert status == 400 and http_error(err) == ("sequence_too_long", "texts[0]"), err


@pytest.mark.parametrize("direction", ["sideways", "left", "RIGHT", 3, {}, [], True, ""])
def test_a_bad_truncation_direction_is_422(small, direction):
    api, _ = small
    status, _, err = api.post("/rerank", {"query": QUERY, "texts": [SHORT], "truncate": True,
                                          "truncation_direction": direction})
    assert status == 422, err
    assert http_error(err) == ("invalid_truncation_direction", "truncation_direction"), err


def test_422_says_unprocessable_content(small):
    api, _ = small
    conn = api.connection()
    try:
        conn.request("POST", "/rerank", body=json.dumps(
            {"query": QUERY, "texts": [SHORT], "truncate": True,
             "truncation_direction": "sideways"}).encode(),
            headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert (resp.status, resp.reason) == (422, "Unprocessable Content")
    finally:
        conn.close()


def test_the_server_default():
    """--truncate-documents on cuts where the request does not say; a
    request that says false is still refused."""
    with Daemon("--http-listen", "127.0.0.1:0", "--max-sequence-tokens", str(SEQ_LIMIT),
                "--truncate-documents", "on") as d:
        api = Http(d)
        status, _, got = api.rerank({"query": QUERY, "documents": [MEDIUM]})
        assert status == 200 and got["meta"]["truncated_documents"][0]["index"] == 0, got
        status, _, got = api.post("/rerank", {"query": QUERY, "texts": [MEDIUM]})
        assert status == 200 and got[0]["tokens_dropped"] > 0, got
        status, _, err = api.post("/rerank", {"query": QUERY, "texts": [MEDIUM],
                                              "truncate": False})
        assert status == 400 and http_error(err)[0] == "sequence_too_long", err


def test_score_cuts_only_when_asked(small):
    """/v1/score keeps its exact semantics: a long item is refused unless
    the request asks (vLLM's truncate_prompt_tokens); over gRPC the
    Truncation message, with item_suffix never cut."""
    api, stub = small
    item = tokenize(stub, LEAD + MEDIUM)
    query = tokenize(stub, HEAD + QUERY + MIDDLE, True)
    body = {"query": query, "items": [item], "label_token_ids": [YES, NO]}
    status, _, err = api.score(body)
    assert status == 400 and http_error(err) == ("sequence_too_long", "items[0]"), err
    status, _, got = api.score(dict(body, truncate_prompt_tokens=50))
    assert status == 200, got
    keep = 50 - len(query)
    want = stub.Score(score_pb2.ScoreRequest(query=tokens(query), items=[tokens(item[:keep])],
                                             label_token_ids=[YES, NO]), timeout=120)
    assert bits(got["scores"][0][0]) == bits(want.items[0].scores[0])

    tail = tokenize(stub, TAIL)
    for side, kept in [(score_pb2.TRUNCATION_SIDE_RIGHT, item[:30]),
                       (score_pb2.TRUNCATION_SIDE_LEFT, item[-30:])]:
        for kind in ("text", "ids"):
            req = score_pb2.ScoreRequest(
                query=text(HEAD + QUERY + MIDDLE) if kind == "text" else tokens(query),
                items=[text(LEAD + MEDIUM) if kind == "text" else tokens(item)],
                item_suffix=text(TAIL) if kind == "text" else tokens(tail),
                truncation=score_pb2.Truncation(max_item_tokens=30, side=side),
                label_token_ids=[YES, NO], apply_softmax=True)
            cut = stub.Score(req, timeout=120).items[0]
            assert (cut.tokens_kept, cut.tokens_dropped) == (30, len(item) - 30)
            assert bits(cut.scores[0]) == bits(relevance(stub, kept + tail))
    # a short item with a suffix is the joined text, tokenized as one
    req = score_pb2.ScoreRequest(query=text(HEAD + QUERY + MIDDLE), items=[text(LEAD + SHORT)],
                                 item_suffix=text(TAIL), label_token_ids=[YES, NO],
                                 apply_softmax=True,
                                 truncation=score_pb2.Truncation(max_item_tokens=30))
    whole = stub.Score(req, timeout=120).items[0]
    assert (whole.tokens_kept, whole.tokens_dropped) == (0, 0)
    assert bits(whole.scores[0]) == bits(relevance(stub, tokenize(stub, LEAD + SHORT + TAIL)))


# --- the Rerank RPC --------------------------------------------------------

def test_grpc_rerank_is_http_rerank_bit_for_bit(small):
    """Rerank over gRPC: the same relevance (and TEI's raw log-odds) as the
    HTTP paths, bit for bit, the same order, top_n, documents, and the same
    cuts with the same tokens kept and dropped."""
    api, stub = small
    docs = [SHORT, MEDIUM, "Bananas are yellow.", "The Eiffel tower is in Paris."]
    for body, mode, truncation in [
            ({"truncate": True}, score_pb2.TRUNCATE_MODE_ON, None),
            ({"truncate": True, "truncation_direction": "Left"}, score_pb2.TRUNCATE_MODE_ON,
             score_pb2.Truncation(side=score_pb2.TRUNCATION_SIDE_LEFT))]:
        status, _, tei = api.post("/rerank", {"query": QUERY, "texts": docs, "raw_scores": True,
                                              **body})
        assert status == 200, tei
        _, _, plain = api.post("/rerank", {"query": QUERY, "texts": docs, **body})
        got = stub.Rerank(score_pb2.RerankRequest(query=QUERY, documents=docs, truncate=mode,
                                                  truncation=truncation, return_documents=True),
                          timeout=120)
        assert [r.index for r in got.results] == [r["index"] for r in plain]
        for r, raw, p in zip(got.results, tei, plain):
            assert bits(r.relevance_score) == bits(p["score"])
            assert bits(r.log_odds) == bits(raw["score"])
            assert r.document == docs[r.index]
            assert (r.tokens_kept, r.tokens_dropped) == \
                (p.get("tokens_kept", 0), p.get("tokens_dropped", 0))
        assert got.usage.prompt_tokens > 0 and got.timing.engine_time.ToNanoseconds() > 0
    # Cohere v2's cut to max_tokens_per_doc, and top_n
    status, _, v2 = api.post("/v2/rerank", {"query": QUERY, "documents": docs, "top_n": 2,
                                            "max_tokens_per_doc": 20})
    got = stub.Rerank(score_pb2.RerankRequest(
        query=QUERY, documents=docs, top_n=2, truncate=score_pb2.TRUNCATE_MODE_ON,
        truncation=score_pb2.Truncation(max_item_tokens=20)), timeout=120)
    assert [(r.index, bits(r.relevance_score)) for r in got.results] == \
        [(r["index"], bits(r["relevance_score"])) for r in v2["results"]]
    assert all(r.document == "" for r in got.results)
    assert v2["meta"]["tokens"]["input_tokens"] == got.usage.prompt_tokens


def test_grpc_rerank_refusals(small):
    api, stub = small
    for req, reason, field in [
            (score_pb2.RerankRequest(query=QUERY, documents=[SHORT, MEDIUM]),
             "sequence_too_long", "documents[1]"),
            (score_pb2.RerankRequest(query=QUERY, documents=[MEDIUM],
                                     truncate=score_pb2.TRUNCATE_MODE_OFF),
             "sequence_too_long", "documents[0]"),
            (score_pb2.RerankRequest(query=QUERY, documents=[SHORT], top_n=-1),
             "malformed_request", "top_n"),
            (score_pb2.RerankRequest(query=QUERY, documents=[MEDIUM],
                                     truncate=score_pb2.TRUNCATE_MODE_ON,
                                     truncation=score_pb2.Truncation(max_item_tokens=-3)),
             "invalid_truncation", "truncation.max_item_tokens")]:
        with pytest.raises(grpc.RpcError) as e:
            stub.Rerank(req, timeout=60)
        info = error_info(e.value)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
        assert (info.reason, info.metadata["field"]) == (reason, field), e.value.details()
        assert "items" not in e.value.details(), e.value.details()
    got = stub.Rerank(score_pb2.RerankRequest(query=QUERY, documents=[]), timeout=60)
    assert list(got.results) == []


def test_score_items_cuts_as_score_does(small):
    """ScoreItemsHeader carries ScoreRequest's truncation and item_suffix:
    a stream's items are cut alike, each chunk saying what it cut."""
    _, stub = small
    query = tokenize(stub, HEAD + QUERY + MIDDLE, True)
    items = [text(LEAD + MEDIUM), text(LEAD + SHORT)]
    fields = dict(item_suffix=text(TAIL), label_token_ids=[YES, NO], apply_softmax=True,
                  truncation=score_pb2.Truncation(max_item_tokens=25,
                                                  side=score_pb2.TRUNCATION_SIDE_LEFT))
    unary = stub.Score(score_pb2.ScoreRequest(query=text(HEAD + QUERY + MIDDLE), items=items,
                                              **fields), timeout=120)
    header = score_pb2.ScoreItemsHeader(query=text(HEAD + QUERY + MIDDLE), **fields)
    stream = stub.ScoreItems(iter([score_pb2.ScoreItemsRequest(header=header),
                                   score_pb2.ScoreItemsRequest(
                                       items=score_pb2.ItemBatch(items=items))]), timeout=120)
    seen = {}
    for msg in stream:
        for i, it in zip(msg.chunk.item_indices, msg.chunk.items):
            seen[i] = it
    assert len(query) > 0 and sorted(seen) == [0, 1]
    for i, want in enumerate(unary.items):
        got = seen[i]
        assert (got.tokens_kept, got.tokens_dropped) == (want.tokens_kept, want.tokens_dropped)
        assert [bits(x) for x in got.scores] == [bits(x) for x in want.scores]
    assert unary.items[0].tokens_dropped > 0 and unary.items[1].tokens_dropped == 0


def test_no_room_left_is_still_refused(small):
    """When the query and the template's tail alone fill the prompt there
    is nothing of the document to cut to: it is refused, naming it, and
    nothing is counted as cut."""
    api, _ = small
    long_query = " ".join(WORDS[i % len(WORDS)] for i in range(SEQ_LIMIT))
    status, _, err = api.post("/rerank", {"query": long_query, "texts": [SHORT],
                                          "truncate": True})
    assert status == 400 and http_error(err) == ("sequence_too_long", "texts[0]"), err
