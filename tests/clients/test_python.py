"""test_python.py — the lmscore Python package (built by the python-client
target) end to end against a real lmscored: every method of Client and
AsyncClient (so every RPC: Score, ScoreStream, ScoreItems, Rerank, Tokenize,
GetModelInfo, Health/Check), and the typed errors with the ErrorInfo reason."""

import asyncio
import math
import re

import pytest

import lmscore
from conftest import MAX_ITEMS

LABELS = [3869, 1939]
QUERY_IDS = [1, 450, 3303, 338]


@pytest.fixture(scope="module")
def client(daemon):
    with lmscore.Client(daemon.target) as c:
        yield c


def run(coro):
    return asyncio.run(coro)


def close_all(a, b, rel=1e-4):
    return all(math.isclose(x, y, rel_tol=rel, abs_tol=1e-12) for x, y in zip(a, b))


# --- sync -----------------------------------------------------------------

def test_health_and_info(client):
    assert client.health() == "SERVING"
    assert client.health("lmscore.v1.ScoreService") == "SERVING"
    info = client.info()
    assert info.architecture == "llama" and info.vocab_size == 32000
    assert info.limits.max_items == MAX_ITEMS
    assert info.precision == "f32" and info.precision_reason.startswith("auto: ")
    assert info.weight_bytes == 4 * info.weight_parameters > 0


def test_tokenize(client):
    ids = client.tokenize("Hello world")
    assert ids and client.tokenize("Hello world", add_special_tokens=True) == [1] + ids


def test_score_with_text_and_label_texts(client):
    label = next(t for t in ["yes", "a", "1"] if len(client.tokenize(t)) == 1)
    result = client.score("Is the sky blue?", [" yes", " no", ""], labels=[label])
    assert len(result.scores) == 3 and all(0 < s[0] <= 1 for s in result.scores)
    assert result.label_token_ids == client.tokenize(label)
    assert result.logprobs is None
    assert result.algorithm in {"serial", "packed_dense", "packed_segment", "prefill_extend"}
    assert result.usage.prompt_tokens > 0
    # tokenizing text is preparation; scoring is engine time
    assert result.timing.prepare_s > 0 and result.timing.engine_s > 0
    assert result.timing.queue_s >= 0


def test_score_softmax_and_logprobs(client):
    result = client.score(QUERY_IDS, [[263, 1243], [7]], labels=LABELS, apply_softmax=True,
                          return_logprobs=True, algorithm="packed_segment")
    assert result.algorithm == "packed_segment"
    for scores, logprobs in zip(result.scores, result.logprobs):
        assert math.isclose(sum(scores), 1.0, rel_tol=1e-5)
        z = sum(math.exp(lp) for lp in logprobs)
        assert close_all(scores, [math.exp(lp) / z for lp in logprobs])


def test_python_and_cli_agree(client, cli):
    import json
    out = cli("score", "--query-ids", ",".join(map(str, QUERY_IDS)), "--item-ids", "263,1243",
              "--label-id", ",".join(map(str, LABELS)), "--json")
    assert out.returncode == 0, out.stderr
    from_cli = json.loads(out.stdout)["items"][0]["scores"]
    assert close_all(client.score(QUERY_IDS, [[263, 1243]], labels=LABELS).scores[0], from_cli,
                     rel=1e-6)


def test_score_stream_from_a_generator(client):
    n = 500
    items = (f"candidate {i}" for i in range(n))
    stream = client.score_stream("Pick one:", items, labels=LABELS, batch_size=MAX_ITEMS,
                                 return_logprobs=True)
    got = {item.index: item for item in stream}
    assert sorted(got) == list(range(n))
    assert stream.summary.item_count == n and stream.summary.label_token_ids == LABELS
    assert stream.summary.timing.engine_s > 0
    for item in got.values():
        assert close_all(item.scores, [math.exp(lp) for lp in item.logprobs])
    direct = client.score("Pick one:", ["candidate 7", "candidate 499"], labels=LABELS)
    assert close_all(got[7].scores, direct.scores[0])
    assert close_all(got[499].scores, direct.scores[1])


def test_score_as_completed_matches_score(client):
    items = [[3 + i, 4] for i in range(40)]
    stream = client.score_as_completed(QUERY_IDS, items, labels=LABELS, return_logprobs=True)
    got = {item.index: item for item in stream}
    assert sorted(got) == list(range(40))
    assert stream.summary.item_count == 40
    direct = client.score(QUERY_IDS, items, labels=LABELS)
    for i, scores in enumerate(direct.scores):
        assert close_all(got[i].scores, scores)
    with pytest.raises(lmscore.InvalidArgumentError) as e:
        list(client.score_as_completed(QUERY_IDS, [[40000]], labels=LABELS))
    assert e.value.reason == "token_id_exceeds_vocab"


def test_invalid_argument_carries_the_reason(client):
    with pytest.raises(lmscore.InvalidArgumentError) as e:
        client.score(QUERY_IDS, [[40000]], labels=LABELS)
    assert e.value.reason == "token_id_exceeds_vocab"
    assert e.value.field.startswith("items[0]")
    assert e.value.domain == "lmscore"
    assert "reason: token_id_exceeds_vocab" in str(e.value)


@pytest.mark.parametrize("call, reason", [
    (lambda c: c.score("text", [[4]], labels=LABELS), "mixed_input_types"),
    (lambda c: c.score(QUERY_IDS, [[4]] * (MAX_ITEMS + 1), labels=LABELS), "too_many_items"),
    (lambda c: c.score("q", ["x"], labels=["two words here"]), "label_not_single_token"),
    (lambda c: c.score(QUERY_IDS, [[4]], labels=[-1]), "negative_token_id"),
])
def test_error_reasons(client, call, reason):
    with pytest.raises(lmscore.InvalidArgumentError) as e:
        call(client)
    assert e.value.reason == reason


def test_stream_error_is_typed(client):
    stream = client.score_stream("q", iter(["a", "b"]), labels=["two words here"])
    with pytest.raises(lmscore.InvalidArgumentError) as e:
        list(stream)
    assert e.value.reason == "label_not_single_token"


def test_deadline_exceeded_is_typed(client):
    with pytest.raises(lmscore.DeadlineExceededError):
        client.score(QUERY_IDS * 10, [[7] * 30] * MAX_ITEMS, labels=LABELS, algorithm="serial",
                     timeout=0.001)


def test_unavailable_is_typed():
    with lmscore.Client("127.0.0.1:1", timeout=2) as c:
        with pytest.raises(lmscore.UnavailableError) as e:
            c.health()
    assert e.value.reason is None


def test_unknown_health_service_is_not_found(client):
    with pytest.raises(lmscore.NotFoundError):
        client.health("no.such.Service")


def test_bad_arguments_fail_before_the_call(client):
    with pytest.raises(TypeError):
        client.score("q", ["x"], labels=[1, "a"])
    with pytest.raises(TypeError):
        client.score("q", [3.5], labels=[1])
    with pytest.raises(ValueError):
        client.score("q", ["x"], labels=[1], algorithm="fastest")


def test_request_ids_go_out_and_come_back(client, daemon):
    # the server keeps the id sent (metadata= of the call) and answers with it
    result = client.score(QUERY_IDS, [[5]], labels=LABELS, metadata={"x-request-id": "py-1"})
    assert result.request_id == "py-1"
    # without one, the id it made: 32 lowercase hex digits, new per call
    made = {client.score(QUERY_IDS, [[5]], labels=LABELS).request_id for _ in range(2)}
    assert len(made) == 2 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in made), made
    stream = client.score_as_completed(QUERY_IDS, [[5], [6]], labels=LABELS,
                                       metadata=[("x-request-id", "py-2")])
    assert stream.request_id is None
    assert len(list(stream)) == 2 and stream.request_id == "py-2"
    with pytest.raises(lmscore.InvalidArgumentError) as e:
        client.score(QUERY_IDS, [[40000]], labels=LABELS, metadata={"x-request-id": "py-3"})
    assert e.value.request_id == "py-3"
    # the client's metadata goes with every call, a call's comes after it
    with lmscore.Client(daemon.target, metadata={"x-request-id": "py-4"}) as c:
        assert c.score(QUERY_IDS, [[5]], labels=LABELS).request_id == "py-4"
        stream = c.score_stream(QUERY_IDS, iter([[5]]), labels=LABELS,
                                metadata={"x-tenant": "blue"})
        assert len(list(stream)) == 1 and stream.request_id == "py-4"
    # nothing answered: no request id
    with lmscore.Client("127.0.0.1:1", timeout=2) as c:
        with pytest.raises(lmscore.UnavailableError) as e:
            c.score(QUERY_IDS, [[5]], labels=LABELS)
    assert e.value.request_id is None


# --- asyncio --------------------------------------------------------------

def test_async_client_every_method(daemon):
    async def main():
        async with lmscore.AsyncClient(daemon.target) as c:
            assert await c.health() == "SERVING"
            assert (await c.info()).vocab_size == 32000
            ids = await c.tokenize("Hello world")
            result = await c.score(QUERY_IDS, [ids, [7]], labels=LABELS, apply_softmax=True)
            assert all(math.isclose(sum(s), 1.0, rel_tol=1e-5) for s in result.scores)

            async def items():
                for i in range(300):
                    yield [3 + i % 50, 4]
            stream = c.score_stream(QUERY_IDS, items(), labels=LABELS, batch_size=50)
            got = [item async for item in stream]
            assert sorted(i.index for i in got) == list(range(300))
            assert stream.summary.item_count == 300

            sync_items = c.score_stream(QUERY_IDS, [[5], [6]], labels=LABELS)
            assert len([i async for i in sync_items]) == 2

            completed = c.score_as_completed(QUERY_IDS, [[5], [6], [7]], labels=LABELS)
            assert sorted([i.index async for i in completed]) == [0, 1, 2]
            assert completed.summary.item_count == 3
    run(main())


def test_async_errors_are_typed(daemon):
    async def main():
        async with lmscore.AsyncClient(daemon.target) as c:
            with pytest.raises(lmscore.InvalidArgumentError) as e:
                await c.score(QUERY_IDS, [[40000]], labels=LABELS)
            assert e.value.reason == "token_id_exceeds_vocab"
            with pytest.raises(lmscore.InvalidArgumentError) as e:
                [i async for i in c.score_stream("q", ["a"], labels=["two words here"])]
            assert e.value.reason == "label_not_single_token"
            with pytest.raises(lmscore.NotFoundError):
                await c.health("no.such.Service")
    run(main())


def test_async_request_ids(daemon):
    async def main():
        async with lmscore.AsyncClient(daemon.target, metadata={"x-request-id": "apy-1"}) as c:
            assert (await c.score(QUERY_IDS, [[5]], labels=LABELS)).request_id == "apy-1"
            result = await c.score(QUERY_IDS, [[5]], labels=LABELS,
                                   metadata={"x-request-id": "apy-0"})
            # the client's id goes first: the server keeps the first
            assert result.request_id == "apy-1"
        async with lmscore.AsyncClient(daemon.target) as c:
            result = await c.score(QUERY_IDS, [[5]], labels=LABELS,
                                   metadata={"x-request-id": "apy-2"})
            assert result.request_id == "apy-2"
            stream = c.score_stream(QUERY_IDS, [[5], [6]], labels=LABELS,
                                    metadata={"x-request-id": "apy-3"})
            assert len([i async for i in stream]) == 2 and stream.request_id == "apy-3"
            with pytest.raises(lmscore.InvalidArgumentError) as e:
                await c.score(QUERY_IDS, [[40000]], labels=LABELS,
                              metadata={"x-request-id": "apy-4"})
            assert e.value.request_id == "apy-4"
    run(main())


# --- rerank ---------------------------------------------------------------

RERANK_QUERY = "What is the capital of France?"
RERANK_DOCS = ["Paris is the capital of France.", "Bananas are yellow.",
               " ".join(f"word{i}" for i in range(80))]
TAIL = "\nIs the document relevant to the query? Answer:"


@pytest.fixture(scope="module")
def reranker():
    """The demo Qwen3 model, whose tokenizer the yes-no profile fits."""
    from daemon import Daemon
    d = Daemon(model="tiny-qwen3.gguf", flags=["--max-sequence-tokens", "64"])
    yield d
    d.stop()


def test_rerank_sync_and_async(reranker):
    """Client.rerank and AsyncClient.rerank: the relevance is the score of
    the yes-no profile's ScoreRequest, the same float; the long document is
    refused unless truncation is asked for, and then it says what was cut."""
    with lmscore.Client(reranker.target) as c:
        with pytest.raises(lmscore.InvalidArgumentError) as e:
            c.rerank(RERANK_QUERY, RERANK_DOCS, truncate=False)
        assert (e.value.reason, e.value.field) == ("sequence_too_long", "documents[2]")
        got = c.rerank(RERANK_QUERY, RERANK_DOCS[:2], return_documents=True, top_n=1)
        want = c.score(f"Query: {RERANK_QUERY}\nDocument:",
                       [f" {d}{TAIL}" for d in RERANK_DOCS[:2]], labels=[" yes", " no"],
                       apply_softmax=True).scores
        best = max(range(2), key=lambda i: (want[i][0], -i))
        assert [(r.index, r.relevance_score, r.document) for r in got.results] == \
            [(best, want[best][0], RERANK_DOCS[best])]
        assert got.request_id and got.usage.prompt_tokens > 0
        cut = c.rerank(RERANK_QUERY, RERANK_DOCS, truncate=True, max_tokens_per_doc=20)
        by_index = {r.index: r for r in cut.results}
        assert (by_index[2].tokens_kept, by_index[2].tokens_dropped > 0) == (20, True)
        assert by_index[0].tokens_dropped == 0 and by_index[0].document is None
        left = c.rerank(RERANK_QUERY, RERANK_DOCS[2:], truncate=True, max_tokens_per_doc=20,
                        truncation_side="left")
        assert left.results[0].relevance_score != by_index[2].relevance_score
        seq = c.rerank(RERANK_QUERY, RERANK_DOCS[2:], truncate=True, max_sequence_tokens=40)
        plain = c.rerank(RERANK_QUERY, RERANK_DOCS[2:], truncate=True)
        assert seq.usage.prompt_tokens == 40 < plain.usage.prompt_tokens == 64
        assert seq.results[0].tokens_dropped > plain.results[0].tokens_dropped > 0
        with pytest.raises(ValueError):
            c.rerank(RERANK_QUERY, RERANK_DOCS, truncation_side="middle")
        with pytest.raises(TypeError):
            c.rerank(RERANK_QUERY, [[1, 2]])

    async def main():
        async with lmscore.AsyncClient(reranker.target) as c:
            return await c.rerank(RERANK_QUERY, RERANK_DOCS, truncate=True,
                                  max_tokens_per_doc=20)
    assert run(main()).results == cut.results
