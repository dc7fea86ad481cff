"""Every lmscore.v1.ScoreService RPC through a real gRPC client against the real
daemon: results equal the engine's own (tools/lmscore-local on the same model),
streams cover every item exactly once, text inputs equal their token form, TLS.
"""
import os
import subprocess
import threading
import time

import grpc
import pytest

from harness import Cgroup, Daemon, MODEL, local_score, text, tokens
from lmscore.v1 import score_pb2, score_pb2_grpc

ALGORITHMS = {
    score_pb2.ALGORITHM_SERIAL: "serial",
    score_pb2.ALGORITHM_PACKED_DENSE: "packed_dense",
    score_pb2.ALGORITHM_PACKED_SEGMENT: "packed_segment",
    score_pb2.ALGORITHM_PREFILL_EXTEND: "prefill_extend",
}
QUERY = [9707, 11, 1879, 374, 264, 1273, 13]
ITEMS = [[358, 1075], [], [1879, 4460, 11, 323, 6785], [220], [2055, 2055, 2055]]
LABELS = [9454, 2753, 13, 220]
TOL = 2e-6


@pytest.fixture(scope="module")
def daemon():
    with Daemon("--max-items", "64", "--max-sequence-tokens", "96") as d:
        yield d


@pytest.fixture(scope="module")
def stub(daemon):
    with daemon.channel() as ch:
        yield score_pb2_grpc.ScoreServiceStub(ch)


def request(algorithm=score_pb2.ALGORITHM_UNSPECIFIED, **kw):
    fields = dict(query=tokens(QUERY), items=[tokens(i) for i in ITEMS], label_token_ids=LABELS,
                  return_logprobs=True, algorithm=algorithm)
    fields.update(kw)
    return score_pb2.ScoreRequest(**fields)


def local_request(algorithm="auto", **kw):
    req = {"query": QUERY, "items": ITEMS, "label_token_ids": LABELS, "algorithm": algorithm}
    req.update(kw)
    return req


def assert_close(got_rows, want_rows):
    assert len(got_rows) == len(want_rows)
    for got, want in zip(got_rows, want_rows):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert abs(g - w) <= TOL * max(1.0, abs(w)), (got, want)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_score_equals_engine_for_each_algorithm(stub, algorithm):
    resp = stub.Score(request(algorithm), timeout=300)
    want = local_score(local_request(ALGORITHMS[algorithm]))
    assert resp.algorithm == algorithm
    assert ALGORITHMS[resp.algorithm] == want["algorithm"]
    assert resp.algorithm_reason
    assert list(resp.label_token_ids) == LABELS
    assert_close([it.scores for it in resp.items], want["scores"])
    assert_close([it.logprobs for it in resp.items], want["logprobs"])
    assert resp.usage.prompt_tokens == want["prompt_tokens"]
    assert resp.usage.computed_tokens + resp.usage.cached_tokens >= resp.usage.computed_tokens > 0


def test_default_algorithm_is_the_engines_choice(stub):
    # A query this daemon has not seen: the selector counts a cached prefix
    # as free, and lmscore-local always starts with an empty cache.
    query = [9707, 11, 1879, 374, 264, 1273, 30]
    resp = stub.Score(request(query=tokens(query)), timeout=300)
    want = local_score(local_request(query=query))
    assert ALGORITHMS[resp.algorithm] == want["algorithm"]
    assert_close([it.scores for it in resp.items], want["scores"])


@pytest.mark.parametrize("options", [dict(apply_softmax=True), dict(item_first=True),
                                     dict(apply_softmax=True, item_first=True)])
def test_softmax_and_item_first(stub, options):
    resp = stub.Score(request(**options), timeout=300)
    want = local_score(local_request(**options))
    assert_close([it.scores for it in resp.items], want["scores"])
    assert_close([it.logprobs for it in resp.items], want["logprobs"])
    if options.get("apply_softmax"):
        for it in resp.items:
            assert abs(sum(it.scores) - 1.0) < 1e-5
    if options.get("item_first"):
        assert resp.algorithm == score_pb2.ALGORITHM_SERIAL


def test_logprobs_only_when_asked(stub):
    resp = stub.Score(request(return_logprobs=False), timeout=300)
    assert all(len(it.scores) == len(LABELS) and len(it.logprobs) == 0 for it in resp.items)


def test_no_items_is_an_empty_answer(stub):
    resp = stub.Score(request(items=[]), timeout=60)
    assert len(resp.items) == 0 and list(resp.label_token_ids) == LABELS


def test_text_inputs_equal_engine_and_token_form(stub):
    query, items, labels = "The capital of France is", [" Paris", " London", ""], [" yes", " no"]
    resp = stub.Score(score_pb2.ScoreRequest(query=text(query), items=[text(i) for i in items],
                                             label_texts=labels, return_logprobs=True),
                      timeout=300)
    want = local_score({"query": query, "items": items, "label_texts": labels})
    assert_close([it.scores for it in resp.items], want["scores"])
    assert_close([it.logprobs for it in resp.items], want["logprobs"])

    q_ids = stub.Tokenize(score_pb2.TokenizeRequest(text=query, add_special_tokens=True)).token_ids
    i_ids = [stub.Tokenize(score_pb2.TokenizeRequest(text=i)).token_ids for i in items]
    l_ids = [stub.Tokenize(score_pb2.TokenizeRequest(text=l)).token_ids for l in labels]
    assert all(len(l) == 1 for l in l_ids)
    assert list(resp.label_token_ids) == [l[0] for l in l_ids]
    by_ids = stub.Score(score_pb2.ScoreRequest(query=tokens(q_ids), items=[tokens(i) for i in i_ids],
                                               label_token_ids=[l[0] for l in l_ids]), timeout=300)
    assert [list(it.scores) for it in by_ids.items] == [list(it.scores) for it in resp.items]


def test_tokenize(stub):
    plain = stub.Tokenize(score_pb2.TokenizeRequest(text="Hello, world!")).token_ids
    assert len(plain) >= 3
    special = stub.Tokenize(score_pb2.TokenizeRequest(text="Hello, world!",
                                                      add_special_tokens=True)).token_ids
    assert list(special[len(special) - len(plain):]) == list(plain)
    assert stub.Tokenize(score_pb2.TokenizeRequest(text="")).token_ids == []


def test_score_stream_chunks_cover_every_item_once(stub):
    items = [tokens([100 + i, 200 + i, 7]) for i in range(40)]
    unary = stub.Score(request(items=items), timeout=300)
    seen, summaries = {}, []
    for msg in stub.ScoreStream(request(items=items), timeout=300):
        if msg.WhichOneof("kind") == "chunk":
            assert len(msg.chunk.item_indices) == len(msg.chunk.items) > 0
            for idx, it in zip(msg.chunk.item_indices, msg.chunk.items):
                assert idx not in seen
                seen[idx] = it
        else:
            summaries.append(msg.summary)
    assert sorted(seen) == list(range(len(items)))
    for i, it in enumerate(unary.items):
        assert list(seen[i].scores) == list(it.scores)
        assert list(seen[i].logprobs) == list(it.logprobs)
    assert len(summaries) == 1 and summaries[0].item_count == len(items)
    assert list(summaries[0].label_token_ids) == LABELS
    assert summaries[0].usage.prompt_tokens == unary.usage.prompt_tokens


def items_requests(header, batches, gate=None):
    yield score_pb2.ScoreItemsRequest(header=header)
    for k, batch in enumerate(batches):
        if gate is not None and k > 0 and batches[k - 1]:
            # The next batch goes only after a score of the previous one came
            # back: a server that waited for the whole stream would hang here.
            assert gate.wait(300), "no score came back while items were still arriving"
            gate.clear()
        yield score_pb2.ScoreItemsRequest(items=score_pb2.ItemBatch(items=batch))


def test_score_items_streams_while_items_arrive(stub):
    all_items = [tokens([300 + i, 17, 400 + i % 7]) for i in range(23)]
    batches = [all_items[0:5], all_items[5:6], all_items[6:6], all_items[6:23]]
    header = score_pb2.ScoreItemsHeader(query=tokens(QUERY), label_token_ids=LABELS,
                                        return_logprobs=True,
                                        algorithm=score_pb2.ALGORITHM_PREFILL_EXTEND)
    gate = threading.Event()
    seen, summaries = {}, []
    for msg in stub.ScoreItems(items_requests(header, batches, gate), timeout=300):
        if msg.WhichOneof("kind") == "chunk":
            for idx, it in zip(msg.chunk.item_indices, msg.chunk.items):
                assert idx not in seen
                seen[idx] = it
            gate.set()
        else:
            summaries.append(msg.summary)
    unary = stub.Score(request(items=all_items), timeout=300)
    assert sorted(seen) == list(range(len(all_items)))
    for i, it in enumerate(unary.items):
        assert_close([seen[i].scores, seen[i].logprobs], [it.scores, it.logprobs])
    assert len(summaries) == 1 and summaries[0].item_count == len(all_items)
    # the query was prefilled once: later batches reuse its KV
    assert summaries[0].usage.cached_tokens > 0


def test_score_items_shares_its_messages_with_score_and_score_stream():
    """ScoreItemsHeader is ScoreRequest without its items (the daemon turns
    both into an engine request with one conversion), and ScoreStream and
    ScoreItems answer with the one ScoreStreamResponse: a field added to
    only one side fails here."""
    def fields(message, leave_out=()):
        return {(f.name, f.json_name, f.type, f.label,
                 f.message_type and f.message_type.full_name, f.enum_type and f.enum_type.full_name)
                for f in message.DESCRIPTOR.fields if f.name not in leave_out}
    assert fields(score_pb2.ScoreRequest, leave_out={"items"}) == fields(score_pb2.ScoreItemsHeader)
    methods = score_pb2.DESCRIPTOR.services_by_name["ScoreService"].methods_by_name
    assert methods["ScoreItems"].output_type is methods["ScoreStream"].output_type


def test_score_items_with_text_and_label_texts(stub):
    header = score_pb2.ScoreItemsHeader(query=text("Is this review positive?"),
                                        label_texts=[" yes", " no"])
    items = [text(" Great film."), text(" Dull and long.")]
    got = list(stub.ScoreItems(items_requests(header, [items[:1], items[1:]]), timeout=300))
    scores = {i: it for m in got if m.WhichOneof("kind") == "chunk"
              for i, it in zip(m.chunk.item_indices, m.chunk.items)}
    want = local_score({"query": "Is this review positive?", "items": [" Great film.",
                        " Dull and long."], "label_texts": [" yes", " no"]})
    assert_close([scores[0].scores, scores[1].scores], want["scores"])
    assert got[-1].summary.item_count == 2


def seconds(duration):
    return duration.ToNanoseconds() / 1e9


def assert_timing_within(timing, wall):
    """Each part of the server's timing is set and, together, no longer than
    the call as the client saw it."""
    parts = [seconds(timing.queue_time), seconds(timing.prepare_time),
             seconds(timing.engine_time)]
    assert all(p >= 0 for p in parts) and parts[2] > 0, timing
    assert sum(parts) <= wall, (timing, wall)


def test_server_timing_fits_inside_the_call(stub):
    items = [tokens([100 + i, 200 + i, 7]) for i in range(40)]
    t0 = time.monotonic()
    resp = stub.Score(request(items=items), timeout=300)
    assert_timing_within(resp.timing, time.monotonic() - t0)

    t0 = time.monotonic()
    summary = list(stub.ScoreStream(request(items=items), timeout=300))[-1].summary
    assert_timing_within(summary.timing, time.monotonic() - t0)

    header = score_pb2.ScoreItemsHeader(query=tokens(QUERY), label_token_ids=LABELS)
    t0 = time.monotonic()
    got = list(stub.ScoreItems(items_requests(header, [items[:10], items[10:]]), timeout=300))
    assert_timing_within(got[-1].summary.timing, time.monotonic() - t0)


def test_queue_time_is_the_wait_for_a_worker():
    # One worker, two calls at once: whichever runs second waits for the
    # first one's engine time, and says so.
    items = [tokens([300 + i, 17, 400 + i % 7] * 6) for i in range(60)]
    with Daemon("--workers", "1") as d, d.channel() as ch:
        stub = score_pb2_grpc.ScoreServiceStub(ch)
        start = threading.Barrier(2)
        got = []

        def call():
            start.wait()
            got.append(stub.Score(request(items=items, algorithm=score_pb2.ALGORITHM_SERIAL),
                                  timeout=300))

        threads = [threading.Thread(target=call) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 2
        first, second = sorted(got, key=lambda r: seconds(r.timing.queue_time))
        assert seconds(second.timing.queue_time) >= 0.5 * seconds(first.timing.engine_time), (
            first.timing, second.timing)


def test_get_model_info(daemon, stub):
    info = stub.GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=30)
    assert info.model_name == "tiny-qwen3"
    assert info.architecture == "qwen3"
    assert info.vocab_size == 151936
    assert info.context_length > 0
    assert set(info.algorithms) == set(ALGORITHMS)
    assert info.default_algorithm == score_pb2.ALGORITHM_UNSPECIFIED
    assert info.has_tokenizer
    assert info.delimiter_token_id == -1
    assert info.limits.max_items == 64
    assert info.limits.max_sequence_tokens == 96
    assert info.limits.workers == 1 and info.limits.queue_depth == 64  # the defaults
    assert info.limits.worker_threads >= 1
    assert info.limits.max_message_bytes == 16 << 20
    assert info.num_layers > 0 and info.hidden_size > 0
    assert info.num_attention_heads >= info.num_key_value_heads > 0
    before = info.stats
    stub.Score(request(), timeout=300)
    after = daemon.wait_idle()  # the call's bookkeeping ends just after its answer
    assert after.requests_total >= before.requests_total + 2
    assert after.items_total == before.items_total + len(ITEMS)
    assert after.uptime_seconds > before.uptime_seconds
    assert after.engine_bytes > 0


def test_unknown_method_is_unimplemented(daemon):
    with daemon.channel() as ch:
        call = ch.unary_unary("/lmscore.v1.ScoreService/NoSuchMethod")
        with pytest.raises(grpc.RpcError) as e:
            call(b"", timeout=30)
        assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_tls(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    with Daemon("--tls-cert", str(cert), "--tls-key", str(key), wait_serving=False) as d:
        creds = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        opts = [("grpc.ssl_target_name_override", "localhost")]
        with grpc.secure_channel(d.target, creds, options=opts) as ch:
            stub = score_pb2_grpc.ScoreServiceStub(ch)
            info = None
            for _ in range(600):
                try:
                    info = stub.GetModelInfo(score_pb2.GetModelInfoRequest(), timeout=30)
                    break
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.UNAVAILABLE
                    threading.Event().wait(0.1)
            assert info is not None and info.model_name == "tiny-qwen3"
            assert stub.Score(request(), timeout=300).items
        with d.channel() as plain:
            with pytest.raises(grpc.RpcError) as e:
                score_pb2_grpc.ScoreServiceStub(plain).GetModelInfo(
                    score_pb2.GetModelInfoRequest(), timeout=10)
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE


def test_bad_flags_fail_fast():
    from harness import LMSCORED
    out = subprocess.run([LMSCORED, "--model", MODEL, "--workers", "zero"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "--workers" in out.stderr
    out = subprocess.run([LMSCORED, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for flag in ["--model", "--listen", "--tls-cert", "--tls-key", "--workers", "--threads",
                 "--queue-depth", "--max-message-bytes", "--max-items", "--max-sequence-tokens",
                 "--algorithm",
                 "--multi-item-scoring-delimiter", "--max-packed-tokens", "--prefix-cache-bytes",
                 "--drain-timeout", "--log-format", "LMSCORE_MODEL"]:
        assert flag in out.stdout
    env = dict(os.environ, LMSCORE_MODEL=os.path.join(os.path.dirname(MODEL), "missing.gguf"))
    out = subprocess.run([LMSCORED, "--listen", "127.0.0.1:0"], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 1 and "cannot load the model" in out.stderr


def limits_of(daemon):
    with daemon.channel() as ch:
        return score_pb2_grpc.ScoreServiceStub(ch).GetModelInfo(
            score_pb2.GetModelInfoRequest(), timeout=30).limits


def test_environment_and_flags():
    env = {"LMSCORE_WORKERS": "3", "LMSCORE_QUEUE_DEPTH": "7", "LMSCORE_MAX_ITEMS": "11",
           "LMSCORE_MAX_MESSAGE_BYTES": "2M", "LMSCORE_DRAIN_TIMEOUT": "500ms",
           "LMSCORE_LOG_FORMAT": "json", "LMSCORE_THREADS": "7"}
    with Daemon("--queue-depth", "9", env=env) as d:
        limits = limits_of(d)
        assert (limits.workers, limits.queue_depth, limits.max_items) == (3, 9, 11)  # flag wins
        assert limits.max_message_bytes == 2 << 20
        assert limits.worker_threads == 2  # 7 threads among 3 workers
        assert '"msg":"serving"' in d.log()  # JSON lines


def test_threads_come_from_the_cpus_the_daemon_may_use():
    # OMP_NUM_THREADS, when set, is the budget; else the affinity mask.
    env = {"OMP_NUM_THREADS": "4"}
    with Daemon("--workers", "2", env=env) as d:
        assert limits_of(d).worker_threads == 2
    env = {"OMP_NUM_THREADS": ""}
    with Daemon("--workers", "1", env=env, wrapper=["taskset", "-c", "0"]) as d:
        assert limits_of(d).worker_threads == 1
    with Daemon("--workers", "3", "--threads", "2") as d:
        assert limits_of(d).worker_threads == 1  # at least one each
        assert "more workers than threads" in d.log()


@pytest.mark.platform
def test_threads_follow_the_cgroup_cpu_quota():
    # A container's CPU limit is a cgroup quota: a 1-CPU limit means one
    # thread, whatever the host has.
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: a 1-CPU quota would not show")
    with Cgroup("cpu", {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "100000"},
                {"cpu.max": "100000 100000"}) as cgroup:
        with Daemon(env={"OMP_NUM_THREADS": ""}, wrapper=cgroup.wrapper()) as d:
            assert limits_of(d).worker_threads == 1
