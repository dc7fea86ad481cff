"""test_engine_vs_reference.py — the engine (through lmscore-local) against the
numpy reference on the same checkpoint files, and the Score semantics and
validation reasons of docs/contract.md as the CLI's JSON shows them.

The gate: for every tiny model the build made, at least 20 seeded random
sequences of 1 to 300 tokens, max |Δ logprob| ≤ 1e-4 on the label ids
(random ids across the whole vocabulary plus each sequence's argmax).
"""

import functools
import os

import numpy as np
import pytest

import ref_score
from conftest import (CORE_MODELS, MEASURED, discover_models, gguf_hf_pairs, preset_of,
                      reference_model, run_engine, score_with_engine)

LOGPROB_TOL = 1e-4
N_SEQUENCES = 24
MAX_LEN = 300
N_RANDOM_LABELS = 32
# Validation does not depend on the checkpoint beyond its vocabulary size and
# context length, which come from the file.
VALIDATION_MODEL = "tiny-qwen3.gguf"


def pytest_generate_tests(metafunc):
    if "model" in metafunc.fixturenames:
        found = discover_models()
        metafunc.parametrize("model", found or [None], ids=found or ["no-models-found"],
                             indirect=True)
    if "core_model" in metafunc.fixturenames:
        metafunc.parametrize("core_model", CORE_MODELS, indirect=True)
    if "pair" in metafunc.fixturenames:
        pairs = gguf_hf_pairs()
        metafunc.parametrize("pair", pairs or [None],
                             ids=[p[0] for p in pairs] or ["no-pairs-found"])


# Module scope: pytest then runs all tests of one model together, so each
# reference model is loaded once.
@pytest.fixture(scope="module")
def model(request, engine_ready):
    if request.param is None:
        pytest.fail("no tiny-* models under $LMSCORE_BUILD_DIR/models (build the models target)")
    return request.param


@pytest.fixture(scope="module")
def core_model(request, engine_ready):
    if request.param not in discover_models():
        pytest.fail(f"core model {request.param} missing from $LMSCORE_BUILD_DIR/models")
    return request.param


def rng_for(name, purpose):
    # Seeded by preset and purpose, so a GGUF and its HF twin get the same draws.
    return np.random.default_rng([sum(map(ord, preset_of(name))), sum(map(ord, purpose))])


def random_sequences(rng, vocab, n=N_SEQUENCES, max_len=MAX_LEN):
    lengths = [1, max_len] + rng.integers(2, max_len, size=n - 2).tolist()
    return [rng.integers(0, vocab, size=k).tolist() for k in lengths]


def test_core_models_present(engine_ready):
    found = set(discover_models())
    missing = [m for m in CORE_MODELS if m not in found]
    assert not missing, f"core models missing from {os.environ['LMSCORE_BUILD_DIR']}/models: {missing}"


@functools.lru_cache(maxsize=None)
def gate_run(name):
    """The gate's sequences and labels, the reference's and the engine's logprobs
    (computed once: the GGUF/HF comparison reuses them)."""
    ref = reference_model(name)
    vocab = ref.spec.vocab_size
    rng = rng_for(name, "gate")
    seqs = random_sequences(rng, vocab)
    assert max(len(s) for s in seqs) <= ref.spec.context_length
    full = [ref.logprobs(s)[0] for s in seqs]
    labels = set(rng.integers(0, vocab, size=N_RANDOM_LABELS).tolist())
    labels |= {0, vocab - 1} | {int(np.argmax(lp)) for lp in full}
    labels = sorted(labels)
    out = score_with_engine(name, {"query": [], "items": seqs, "label_token_ids": labels,
                                   "apply_softmax": False, "item_first": False,
                                   "algorithm": "serial"})
    return {"seqs": seqs, "labels": labels, "want_lp": np.array([lp[labels] for lp in full]),
            "out": out}


def test_logprobs_match_reference(model):
    run = gate_run(model)
    seqs, labels, want_lp, out = run["seqs"], run["labels"], run["want_lp"], run["out"]
    got_lp = np.array(out["logprobs"], dtype=np.float64)
    got_scores = np.array(out["scores"], dtype=np.float64)
    assert got_lp.shape == want_lp.shape == (len(seqs), len(labels))
    delta = np.abs(got_lp - want_lp)
    worst = np.unravel_index(np.argmax(delta), delta.shape)
    MEASURED[model] = {"max_abs_dlogprob": float(delta.max()), "sequences": len(seqs),
                       "labels": len(labels), "tokens": sum(map(len, seqs)),
                       "min_len": min(map(len, seqs)), "max_len": max(map(len, seqs))}
    assert delta.max() <= LOGPROB_TOL, (
        f"{model}: max |Δ logprob| {delta.max():.3e} at sequence {worst[0]} "
        f"(length {len(seqs[worst[0]])}), label {labels[worst[1]]}: "
        f"engine {got_lp[worst]:.6f} reference {want_lp[worst]:.6f}")
    # apply_softmax false: scores are exp(lp), of the engine's own lp and of the reference's.
    np.testing.assert_allclose(got_scores, np.exp(got_lp), rtol=1e-6, atol=0)
    np.testing.assert_allclose(got_scores, np.exp(want_lp), rtol=1.5 * LOGPROB_TOL, atol=0)
    assert out["algorithm"] == "serial"
    assert out["prompt_tokens"] == sum(map(len, seqs))


def semantics_request(model, **options):
    ref = reference_model(model)
    rng = rng_for(model, "semantics")
    vocab = ref.spec.vocab_size
    query = rng.integers(0, vocab, size=7).tolist()
    items = [rng.integers(0, vocab, size=k).tolist() for k in (5, 1, 12)] + [[]]
    labels = rng.choice(vocab, size=16, replace=False).tolist()
    req = {"query": query, "items": items, "label_token_ids": labels,
           "apply_softmax": False, "item_first": False, "algorithm": "serial"}
    req.update(options)
    return req


def check_against_reference(model, req):
    """The engine's answer to req against ref_score's (the empty last item
    included: the reference scores it at the query's last token)."""
    out = score_with_engine(model, req)
    want = ref_score.score(reference_model(model), req["query"], req["items"],
                           req["label_token_ids"], req["apply_softmax"], req["item_first"])
    np.testing.assert_allclose(out["logprobs"], want["logprobs"], rtol=0, atol=LOGPROB_TOL)
    np.testing.assert_allclose(out["scores"], want["scores"], rtol=2 * LOGPROB_TOL, atol=0)
    return out


def test_apply_softmax_both_ways_and_empty_item(core_model):
    plain = check_against_reference(core_model, semantics_request(core_model))
    soft = check_against_reference(core_model, semantics_request(core_model, apply_softmax=True))
    # The same lp either way; with apply_softmax each row is the softmax of its lp.
    np.testing.assert_array_equal(plain["logprobs"], soft["logprobs"])
    np.testing.assert_allclose(np.sum(soft["scores"], axis=1), 1.0, atol=1e-5)
    lp = np.array(soft["logprobs"])
    e = np.exp(lp - lp.max(axis=1, keepdims=True))
    np.testing.assert_allclose(soft["scores"], e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_item_first(core_model):
    first = check_against_reference(core_model, semantics_request(core_model, item_first=True))
    plain = score_with_engine(core_model, semantics_request(core_model))
    # Honoured, not ignored: the non-empty items score differently; the empty
    # item is the query alone either way.
    assert np.abs(np.array(first["logprobs"][:3]) - np.array(plain["logprobs"][:3])).max() > 1e-3
    np.testing.assert_allclose(first["logprobs"][3], plain["logprobs"][3], rtol=1e-6, atol=0)


def test_empty_item_list(core_model):
    out = score_with_engine(core_model, semantics_request(core_model, items=[]))
    assert out["scores"] == [] and out.get("logprobs", []) == []


def test_gguf_and_hf_of_a_preset_agree(pair, engine_ready):
    if pair is None:
        pytest.fail("no GGUF/HF pair of a preset found under $LMSCORE_BUILD_DIR/models")
    g, h = gate_run(pair[0]), gate_run(pair[1])
    assert g["seqs"] == h["seqs"]
    common = sorted(set(g["labels"]) & set(h["labels"]))
    cols_g = [g["labels"].index(t) for t in common]
    cols_h = [h["labels"].index(t) for t in common]
    lp_g = np.array(g["out"]["logprobs"])[:, cols_g]
    lp_h = np.array(h["out"]["logprobs"])[:, cols_h]
    np.testing.assert_allclose(lp_g, lp_h, rtol=0, atol=LOGPROB_TOL)
    # The reference reads both files to the same model (layouts and RoPE
    # pairings differ; the function must not).
    np.testing.assert_allclose(g["want_lp"][:, cols_g], h["want_lp"][:, cols_h], rtol=0,
                               atol=LOGPROB_TOL)


# ------------------------------------------------------------------ validation


def invalid_requests(vocab, context_length):
    base = {"query": [1, 2, 3], "items": [[4, 5], [6]], "label_token_ids": [7, 8],
            "apply_softmax": False, "item_first": False, "algorithm": "serial"}
    cases = {
        "empty_labels": {"label_token_ids": []},
        "negative_in_query": {"query": [1, -2, 3]},
        "negative_in_item": {"items": [[4, 5], [-1]]},
        "negative_label": {"label_token_ids": [7, -8]},
        "query_id_at_vocab": {"query": [1, vocab, 3]},
        "item_id_at_vocab": {"items": [[4, vocab + 100], [6]]},
        "label_id_at_vocab": {"label_token_ids": [vocab]},
        "empty_query_and_item": {"query": [], "items": [[4, 5], []]},
        "too_many_items": {"items": [[]] * 10001},
        "sequence_too_long": {"items": [[4], [5] * (context_length - 2)]},
    }
    return {name: {**base, **change} for name, change in cases.items()}


@pytest.mark.parametrize("case", ["empty_labels", "negative_in_query", "negative_in_item",
                                  "negative_label", "query_id_at_vocab", "item_id_at_vocab",
                                  "label_id_at_vocab", "empty_query_and_item",
                                  "too_many_items", "sequence_too_long"])
def test_validation_reason(case, engine_ready):
    ref = reference_model(VALIDATION_MODEL)
    req = invalid_requests(ref.spec.vocab_size, ref.spec.context_length)[case]
    # The engine's defaults: 10000 items, the model's context length.
    reason, field = ref_score.expected_error(req["query"], req["items"], req["label_token_ids"],
                                             req["item_first"], ref.spec.vocab_size, 10000,
                                             ref.spec.context_length)
    code, out, err = run_engine(VALIDATION_MODEL, req)
    assert code == 2, f"exit {code}, stdout {out}, stderr {err}"
    assert out is not None and "error" in out, f"no error JSON: {err}"
    e = out["error"]
    assert e["status"] == "invalid_argument"
    assert e["reason"] == reason, e
    if reason == "empty_query":  # the query, or the item that left the sequence empty
        assert e["field"] in ("query", "items[1]"), e
    else:
        assert e["field"] == field, e
    if reason == "too_many_items":
        assert "10000" in e["message"], e
    if reason == "sequence_too_long":
        assert str(ref.spec.context_length) in e["message"], e


def test_validation_limits_are_tight(engine_ready):
    """Exactly at the limits is accepted: the rules reject only what breaks them."""
    ref = reference_model(VALIDATION_MODEL)
    ctx = ref.spec.context_length
    req = {"query": [1], "items": [[2] * (ctx - 1)], "label_token_ids": [3],
           "apply_softmax": False, "item_first": False, "algorithm": "serial"}
    assert ref_score.expected_error(req["query"], req["items"], [3], False,
                                    ref.spec.vocab_size, 10000, ctx) is None
    code, out, err = run_engine(VALIDATION_MODEL, req)
    assert code == 0, f"a {ctx}-token sequence (the context length) was refused: {out} {err}"
    vocab = ref.spec.vocab_size
    req = {"query": [vocab - 1], "items": [[0]], "label_token_ids": [vocab - 1],
           "apply_softmax": False, "item_first": False, "algorithm": "serial"}
    code, out, err = run_engine(VALIDATION_MODEL, req)
    assert code == 0, f"ids 0 and vocab-1 were refused: {out} {err}"
