"""test_cli.py — the lmscore CLI end to end against a real lmscored: every
subcommand (rerank against the Qwen3 demo model, whose tokenizer the
default rerank profile fits), the output formats, and the error paths, which must print the
server's status code and ErrorInfo reason and exit 1 (usage errors exit 2)."""

import json
import math
import os
import re
import struct
import subprocess
import time

import pytest

from conftest import MAX_ITEMS, MAX_SEQUENCE_TOKENS
from daemon import Daemon, cli_path

STREAM_ITEMS = 10_000


def ok(result):
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def failed(result, code, reason=None, field=None):
    """Asserts the call failed with the server's code (and ErrorInfo reason)."""
    assert result.returncode == 1, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert f": {code}: " in result.stderr, result.stderr
    if reason:
        assert f"reason: {reason}" in result.stderr, result.stderr
    if field:
        assert f"field: {field}" in result.stderr, result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def info(cli):
    return json.loads(ok(cli("info", "--json")))


@pytest.fixture(scope="module")
def single_token_labels(cli):
    """Two label texts the served tokenizer encodes as exactly one token each."""
    found = {}
    for text in ["yes", "no", " yes", " no", "a", "b", "A", "B", "1", "2"]:
        ids = ok(cli("tokenize", text)).split()
        if len(ids) == 1 and ids[0] not in found.values():
            found[text] = ids[0]
        if len(found) == 2:
            return found
    pytest.fail(f"no two single-token labels among the candidates: {found}")


def tsv_rows(text):
    lines = text.strip().splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


# --- health and info ------------------------------------------------------

def test_health_serving(cli):
    assert ok(cli("health")).strip() == "SERVING"


def test_health_of_the_scoring_service(cli):
    assert ok(cli("health", "--service", "lmscore.v1.ScoreService")).strip() == "SERVING"


def test_health_of_an_unknown_service_fails(cli):
    failed(cli("health", "--service", "no.such.Service"), "NOT_FOUND")


def test_health_without_a_server_fails_fast(cli):
    result = cli("health", "--timeout", "2", target="127.0.0.1:1")
    failed(result, "UNAVAILABLE")


def test_info_describes_the_model(cli, info):
    assert info["architecture"] == "llama"
    assert info["vocab_size"] == 32000
    assert info["has_tokenizer"] is True
    assert info["limits"]["max_items"] == MAX_ITEMS
    assert info["limits"]["max_sequence_tokens"] == MAX_SEQUENCE_TOKENS
    assert "ALGORITHM_PREFILL_EXTEND" in info["algorithms"]
    # the demo model is f32 and the daemon runs the default --precision auto
    assert info["precision"] == "f32"
    assert info["precision_reason"] == "auto: every weight kept as stored (f32)"
    assert info["kernels"].startswith("f32 ") and info["weight_formats"].startswith("f32 x")
    assert info["weight_bytes"] == 4 * info["weight_parameters"] > 0
    text = ok(cli("info"))
    assert "vocab_size: 32000\n" in text and f"limits.max_items: {MAX_ITEMS}\n" in text
    assert "precision: f32\n" in text and f"kernels: {info['kernels']}\n" in text


# --- tokenize -------------------------------------------------------------

def test_tokenize_text_and_json_agree(cli):
    ids = [int(t) for t in ok(cli("tokenize", "Hello world")).split()]
    assert ids and all(0 <= i < 32000 for i in ids)
    assert json.loads(ok(cli("tokenize", "--json", "Hello world")))["token_ids"] == ids


def test_tokenize_special_adds_bos(cli):
    plain = ok(cli("tokenize", "Hello")).split()
    special = ok(cli("tokenize", "--special", "Hello")).split()
    assert special[1:] == plain and special[0] == "1"  # Llama 2's <s>


def test_tokenize_wants_one_text(cli):
    result = cli("tokenize")
    assert result.returncode == 2 and "expected operands TEXT" in result.stderr


# --- score ----------------------------------------------------------------

def test_score_table(cli, single_token_labels):
    labels = list(single_token_labels)
    out = ok(cli("score", "--query", "Is the sky blue?", "--item", " Yes, it is.",
                 "--item", " No.", "--item", "", "--label", labels[0], "--label", labels[1]))
    header, rows = tsv_rows(out)
    assert header == ["item"] + [f"score:{single_token_labels[t]}" for t in labels]
    assert [r[0] for r in rows] == ["0", "1", "2"]
    for row in rows:
        assert all(0 < float(v) <= 1 for v in row[1:])


def test_score_json_softmax_and_logprobs(cli):
    result = json.loads(ok(cli("score", "--query-ids", "1,450,3303", "--item-ids", "338,263",
                               "--item-ids", "7", "--label-id", "3869,1939", "--softmax",
                               "--logprobs", "--json")))
    assert result["label_token_ids"] == [3869, 1939]
    assert len(result["items"]) == 2
    for item in result["items"]:
        assert math.isclose(sum(item["scores"]), 1.0, rel_tol=1e-5)
        # softmax over the labels of the full-vocabulary logprobs
        lp = item["logprobs"]
        expected = [math.exp(x - max(lp)) for x in lp]
        expected = [e / sum(expected) for e in expected]
        assert all(math.isclose(a, b, rel_tol=1e-4) for a, b in zip(item["scores"], expected))
    assert result["usage"]["prompt_tokens"] == (3 + 2) + (3 + 1)
    assert result["algorithm"].startswith("ALGORITHM_")
    # durations as proto3 JSON writes them
    timing = result["timing"]
    assert set(timing) == {"queue_time", "prepare_time", "engine_time"}
    assert all(re.fullmatch(r"\d+\.\d{9}s", v) for v in timing.values()), timing
    assert float(timing["engine_time"][:-1]) > 0


def test_score_without_softmax_is_exp_of_logprob(cli):
    result = json.loads(ok(cli("score", "--query-ids", "1,450", "--item-ids", "338",
                               "--label-id", "3869", "--logprobs", "--json")))
    (item,) = result["items"]
    assert math.isclose(item["scores"][0], math.exp(item["logprobs"][0]), rel_tol=1e-4)


def test_text_and_token_ids_score_alike(cli, single_token_labels):
    query, item = "The capital of France is", " Paris"
    q_ids = ",".join(ok(cli("tokenize", "--special", query)).split())
    i_ids = ",".join(ok(cli("tokenize", item)).split())
    label_ids = ",".join(single_token_labels.values())
    by_text = json.loads(ok(cli("score", "--query", query, "--item", item,
                                "--label-id", label_ids, "--json")))
    by_ids = json.loads(ok(cli("score", "--query-ids", q_ids, "--item-ids", i_ids,
                               "--label-id", label_ids, "--json")))
    assert by_text["items"] == by_ids["items"]


@pytest.mark.parametrize("algorithm", ["serial", "packed_dense", "packed_segment",
                                       "prefill_extend"])
def test_every_algorithm_gives_the_same_scores(cli, algorithm):
    args = ["--query-ids", "1,450,3303,338", "--item-ids", "263,1243", "--item-ids", "7",
            "--label-id", "3869,1939", "--json"]
    reference = json.loads(ok(cli("score", *args, "--algorithm", "serial")))
    result = json.loads(ok(cli("score", *args, "--algorithm", algorithm)))
    assert result["algorithm"] == "ALGORITHM_" + algorithm.upper()
    for got, want in zip(result["items"], reference["items"]):
        assert all(math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-12)
                   for a, b in zip(got["scores"], want["scores"]))


def test_score_with_no_items_returns_none(cli):
    result = json.loads(ok(cli("score", "--query", "hello", "--label-id", "3869", "--json")))
    assert result.get("items", []) == []


@pytest.mark.parametrize("args, reason, field", [
    (["--query-ids", "1,2", "--item-ids", "40000", "--label-id", "5"],
     "token_id_exceeds_vocab", "items[0]"),
    (["--query-ids", "1,-3", "--item-ids", "4", "--label-id", "5"],
     "negative_token_id", "query"),
    (["--query-ids", "1,2", "--item-ids", "4", "--label-id", "-5"],
     "negative_token_id", "label_token_ids"),
    (["--query", "text", "--item-ids", "4", "--label-id", "5"],
     "mixed_input_types", "items[0]"),
    (["--query", "text", "--item", "x", "--label", "two words here"],
     "label_not_single_token", "label_texts[0]"),
    (["--query-ids", ",".join(["5"] * (MAX_SEQUENCE_TOKENS + 1)), "--item-ids", "4",
      "--label-id", "5"], "sequence_too_long", None),
])
def test_score_invalid_request_prints_the_reason(cli, args, reason, field):
    failed(cli("score", *args), "INVALID_ARGUMENT", reason, field)


def test_score_too_many_items(cli):
    items = [a for _ in range(MAX_ITEMS + 1) for a in ("--item-ids", "4")]
    stderr = failed(cli("score", "--query-ids", "1", "--label-id", "5", *items),
                    "INVALID_ARGUMENT", "too_many_items")
    assert str(MAX_ITEMS) in stderr


@pytest.mark.parametrize("args, message", [
    (["--item", "x", "--label-id", "5"], "needs a query"),
    (["--query", "q", "--item", "x"], "needs at least one label"),
    (["--query-ids", "1,x", "--label-id", "5"], "not a list of token ids"),
    (["--query", "q", "--label-id", "5", "--algorithm", "fastest"], "--algorithm wants"),
    (["--query", "q", "--label-id", "5", "--no-such-flag"], "unknown option"),
    (["--query", "q", "--label-id", "5", "--timeout", "soon"], "--timeout wants"),
    (["--query", "q", "--label-id", "5", "--metadata", "novalue"], "is not KEY=VALUE"),
    (["--query", "q", "--label-id", "5", "--metadata", "Upper=x"], "is no metadata key"),
    (["--query", "q", "--label-id", "5", "--metadata", "grpc-timeout=1S"], "gRPC's own"),
    (["--query", "q", "--label-id", "5", "--metadata", "k=a\tb"], "not printable ASCII"),
    (["--query", "q", "--label-id", "5", "--request-id", "two words"], "--request-id wants"),
    (["--query", "q", "--label-id", "5", "--request-id", "x" * 129], "--request-id wants"),
    (["--query", "q", "--label-id", "5", *["--metadata", "k=v"] * 17], "at most 16"),
])
def test_score_usage_errors_exit_2(cli, args, message):
    result = cli("score", *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(scope="module")
def debug_daemon():
    """A daemon that logs every call (--log-level debug)."""
    d = Daemon(flags=["--log-level", "debug"])
    yield d
    d.stop()


def call_records(daemon, request_id):
    """The "call finished" records of a request id, as {key: value} (logfmt)."""
    return [dict(re.findall(r'(\w+)="?([^" ]*)"?', line))
            for line in daemon.log_text().splitlines()
            if 'msg="call finished"' in line and f"request_id={request_id} " in line + " "]


def test_request_id_and_metadata_reach_the_server(debug_daemon):
    cmd = [cli_path(), "score", "--target", debug_daemon.target, "--request-id", "cli-req-1",
           "--metadata", f"traceparent={TRACEPARENT}", "--metadata", "x-tenant=blue",
           "--query-ids", "1,2", "--item-ids", "4", "--label-id", "5"]
    ok(subprocess.run(cmd, capture_output=True, text=True, timeout=120))
    debug_daemon_log = []
    for _ in range(100):  # the record is written as the call ends
        debug_daemon_log = call_records(debug_daemon, "cli-req-1")
        if debug_daemon_log:
            break
        time.sleep(0.05)
    (record,) = debug_daemon_log
    assert record["code"] == "OK" and record["trace_id"] == TRACEPARENT.split("-")[1], record


def test_metadata_can_carry_the_request_id(debug_daemon):
    cmd = [cli_path(), "tokenize", "--target", debug_daemon.target,
           "--metadata", "x-request-id=cli-req-2", "hi"]
    ok(subprocess.run(cmd, capture_output=True, text=True, timeout=120))
    for _ in range(100):
        if call_records(debug_daemon, "cli-req-2"):
            return
        time.sleep(0.05)
    pytest.fail(f"no call of request id cli-req-2 in the log:\n{debug_daemon.log_text()}")


def test_a_failed_call_names_its_request_id(cli):
    err = failed(cli("score", "--request-id", "cli-req-3", "--query-ids", "1,2",
                     "--item-ids", "40000", "--label-id", "5"),
                 "INVALID_ARGUMENT", "token_id_exceeds_vocab")
    assert err.rstrip("\n").endswith("(request id: cli-req-3)"), err
    # without one, the id the server made: 32 lowercase hex digits
    err = failed(cli("score", "--query-ids", "1,2", "--item-ids", "40000", "--label-id", "5"),
                 "INVALID_ARGUMENT")
    assert re.search(r"\(request id: [0-9a-f]{32}\)$", err.rstrip("\n")), err


def test_deadline_exceeded(cli):
    items = [a for i in range(MAX_ITEMS) for a in ("--item-ids", ",".join(["7"] * 30))]
    result = cli("score", "--query-ids", ",".join(["5"] * 60), "--label-id", "5",
                 "--algorithm", "serial", "--timeout", "0.001", *items)
    failed(result, "DEADLINE_EXCEEDED")


# --- stream ---------------------------------------------------------------

def stream_rows(out, n_labels):
    rows = {}
    for line in out.splitlines():
        fields = line.split("\t")
        assert len(fields) == 1 + n_labels, line
        index = int(fields[0])
        assert index not in rows, f"item {index} twice"
        rows[index] = [float(v) for v in fields[1:]]
    return rows


def test_stream_ten_thousand_items_from_a_file(cli, tmp_path):
    items = tmp_path / "items.txt"
    items.write_text("".join(f"item number {i}\n" for i in range(STREAM_ITEMS)))
    result = cli("stream", "--query", "Which item is best?", "--label-id", "3869,1939",
                 "--batch", MAX_ITEMS, "--progress", str(items))
    rows = stream_rows(ok(result), 2)
    assert sorted(rows) == list(range(STREAM_ITEMS))
    assert all(0 < v <= 1 for scores in rows.values() for v in scores)
    assert f"{STREAM_ITEMS}/{STREAM_ITEMS} items" in result.stderr  # the progress bar
    assert "algorithm: " in result.stderr
    assert re.search(r"server: [0-9.]+ ms queued, [0-9.]+ ms preparing, [0-9.]+ ms in the engine",
                     result.stderr)
    # The streamed scores are the scores Score gives the same items.
    sample = [0, 1234, STREAM_ITEMS - 1]
    args = [a for i in sample for a in ("--item", f"item number {i}")]
    single = json.loads(ok(cli("score", "--query", "Which item is best?",
                               "--label-id", "3869,1939", "--json", *args)))
    for i, item in zip(sample, single["items"]):
        assert all(math.isclose(a, b, rel_tol=1e-4) for a, b in zip(rows[i], item["scores"]))


def test_stream_token_ids_from_stdin_as_json(cli):
    lines = "".join(f"{i % 100 + 3},{i % 7 + 3}\n" for i in range(150))
    result = cli("stream", "--query-ids", "1,450", "--label-id", "3869", "--ids", "--json",
                 "--logprobs", input=lines)
    records = [json.loads(line) for line in ok(result).splitlines()]
    summary = records.pop()["summary"]
    assert summary["item_count"] == 150 and summary["label_token_ids"] == [3869]
    assert sorted(r["index"] for r in records) == list(range(150))
    for r in records:
        assert math.isclose(r["scores"][0], math.exp(r["logprobs"][0]), rel_tol=1e-4)


def test_stream_bad_input_line_names_the_line(cli):
    result = cli("stream", "--query-ids", "1", "--label-id", "5", "--ids", input="3\n4\nfive\n")
    assert result.returncode == 1 and "line 3" in result.stderr, result.stderr


def test_stream_server_error_prints_the_reason(cli):
    result = cli("stream", "--query", "q", "--label", "two words here", input="a\nb\n")
    failed(result, "INVALID_ARGUMENT", "label_not_single_token")


def test_stream_batch_over_the_limit(cli):
    lines = "x\n" * (MAX_ITEMS + 1)
    result = cli("stream", "--query", "q", "--label-id", "5", "--batch", MAX_ITEMS + 1,
                 input=lines)
    failed(result, "INVALID_ARGUMENT", "too_many_items")


# --- bench ----------------------------------------------------------------

def test_bench_reports_throughput_and_latency(cli):
    result = json.loads(ok(cli("bench", "--concurrency", 2, "--duration", 2, "--warmup", 0.5,
                               "--query-tokens", 8, "--items", 4, "--item-tokens", 4,
                               "--json")))
    assert result["requests"] > 0 and result["errors"] == {}
    assert math.isclose(result["items_per_s"], 4 * result["requests_per_s"], rel_tol=1e-6)
    lat = result["latency_ms"]
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    # the server's timing splits each call's latency
    server = result["server_ms"]
    assert set(server) == {"queue", "engine", "outside"}
    assert 0 < server["engine"]["p50"] <= lat["p50"]
    assert 0 <= server["queue"]["p50"] <= server["queue"]["p99"]
    assert 0 < server["outside"]["p50"] < lat["p50"]


def test_bench_text_output(cli):
    out = ok(cli("bench", "--duration", 2, "--warmup", 0, "--items", 2, "--concurrency", 1))
    assert "items:" in out and "latency ms: p50" in out
    assert re.search(r"server ms \(p50/p99\): queued [0-9.]+/[0-9.]+  engine [0-9.]+/[0-9.]+", out)


def test_bench_counts_errors_and_fails_when_nothing_succeeds(cli):
    result = cli("bench", "--duration", 1, "--warmup", 0, "--items", MAX_ITEMS + 1, "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["requests"] == 0 and report["errors"]["INVALID_ARGUMENT"] > 0
    assert "reason: too_many_items" in result.stderr


# --- the CLI itself -------------------------------------------------------

def test_help_and_unknown_command():
    assert subprocess.run([cli_path(), "--help"], capture_output=True).returncode == 0
    result = subprocess.run([cli_path(), "frobnicate"], capture_output=True, text=True)
    assert result.returncode == 2 and 'unknown command "frobnicate"' in result.stderr
    assert subprocess.run([cli_path()], capture_output=True).returncode == 2


def test_every_command_has_help():
    for command in ["score", "stream", "tokenize", "info", "health", "bench"]:
        result = subprocess.run([cli_path(), command, "--help"], capture_output=True, text=True)
        assert result.returncode == 0 and f"usage: lmscore {command}" in result.stdout


def test_target_from_the_environment(daemon):
    env = dict(os.environ, LMSCORE_TARGET=daemon.target)
    result = subprocess.run([cli_path(), "health"], capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "SERVING"


def test_tls_to_a_plaintext_server_fails(cli):
    failed(cli("health", "--tls", "--timeout", "3"), "UNAVAILABLE")


@pytest.fixture(scope="module")
def reranker():
    """The demo Qwen3 model, whose tokenizer the yes-no rerank profile fits."""
    d = Daemon(model="tiny-qwen3.gguf", flags=["--max-sequence-tokens", "64"])
    yield d
    d.stop()


def test_rerank(cli, reranker):
    import lmscore
    query = "What is the capital of France?"
    docs = ["Paris is the capital of France.", "Bananas are yellow.",
            " ".join(f"word{i}" for i in range(80))]
    args = ["--query", query, *[a for d in docs[:2] for a in ("--document", d)]]
    lines = ok(cli("rerank", *args, "--return-documents", target=reranker.target)).splitlines()
    assert lines[0] == "index\trelevance_score\tlog_odds\ttokens_dropped\tdocument"
    rows = [line.split("\t") for line in lines[1:]]
    with lmscore.Client(reranker.target) as client:
        want = client.rerank(query, docs[:2]).results
    assert [(int(r[0]), r[4]) for r in rows] == [(w.index, docs[w.index]) for w in want]
    for row, w in zip(rows, want):  # %.9g reads back as the same float32
        assert struct.pack("<f", float(row[1])) == struct.pack("<f", w.relevance_score)
    got = json.loads(ok(cli("rerank", *args, "--top-n", "1", "--json",
                            target=reranker.target)))
    assert [r["index"] for r in got["results"]] == [want[0].index]
    long_doc = ["--document", docs[2]]
    failed(cli("rerank", *args, *long_doc, "--truncate", "off", target=reranker.target),
           "INVALID_ARGUMENT", "sequence_too_long")
    cut = ok(cli("rerank", "--query", query, *long_doc, "--truncate", "on",
                 "--max-tokens-per-doc", "10", "--truncation-side", "left",
                 target=reranker.target)).splitlines()
    assert cut[1].split("\t")[0] == "0" and int(cut[1].split("\t")[3]) > 0
    for bad in (["--document", "d"], ["--query", "q", "--truncate", "maybe"],
                ["--query", "q", "--truncation-side", "middle"]):
        assert cli("rerank", *bad, target=reranker.target).returncode == 2
