"""test_reference_self.py — checks the reference itself before it judges the engine.

Self-contained (writes its own tiny checkpoints, no engine needed): RoPE
pairings agree across the two layouts, attention is causal, log-softmax is
normalised, GQA equals the MHA it abbreviates, RoPE depends only on relative
position, both readers decode every dtype, and GGUF and Hugging Face copies of
the same weights give the same numbers for every architecture.
"""

import math

import numpy as np
import pytest

import ref_model
import ref_score
import tiny_checkpoints as tc
from gguf_reader import GGUFError, GGUFFile
from safetensors_reader import HFCheckpoint

ARCHS = ("llama", "qwen2", "qwen3")
LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


def write_pair(tmp_path, arch, gguf_type=0, hf_dtype="F32", shards=1, seed=1, **geometry):
    config, tensors = tc.random_hf_checkpoint(arch, seed, **geometry)
    hf_dir = tmp_path / f"{arch}-hf"
    tc.write_hf_dir(hf_dir, config, tensors, shards=shards, dtype=hf_dtype)
    md, gt = tc.gguf_from_hf(config, tensors)
    gguf_path = tmp_path / f"{arch}.gguf"
    tc.write_gguf(gguf_path, md, gt, ggml_type=gguf_type)
    return ref_model.load_model(str(gguf_path)), ref_model.load_model(str(hf_dir))


def seq(rng, vocab, n):
    return rng.integers(0, vocab, size=n).tolist()


@pytest.mark.parametrize("arch", ARCHS)
def test_gguf_and_hf_copies_agree(tmp_path, arch):
    g, h = write_pair(tmp_path, arch)
    assert g.spec.rope_pairing == ("norm" if arch == "llama" else "neox")
    assert h.spec.rope_pairing == "neox"
    rng = np.random.default_rng(7)
    ids = seq(rng, g.spec.vocab_size, 40)
    pos = list(range(40))
    np.testing.assert_allclose(g.logprobs(ids, pos), h.logprobs(ids, pos), rtol=0, atol=1e-11)


@pytest.mark.parametrize("scaling", [
    {"rope_type": "linear", "factor": 4.0}, LLAMA3_SCALING])
def test_rope_scaling_agrees_across_formats(tmp_path, scaling):
    g, h = write_pair(tmp_path, "llama", rope_scaling=scaling, head_dim=16, n_heads=2,
                      n_kv_heads=1, rope_theta=500000.0)
    base = ref_model.base_inv_freq(500000.0, 16)
    assert not np.allclose(h.spec.inv_freq, base)  # the scaling did something
    # GGUF stores llama3 factors as float32: agreement to float32 rounding.
    np.testing.assert_allclose(g.spec.inv_freq, h.spec.inv_freq, rtol=1e-6)
    ids = seq(np.random.default_rng(3), g.spec.vocab_size, 120)
    np.testing.assert_allclose(g.logprobs(ids, range(120)), h.logprobs(ids, range(120)),
                               rtol=0, atol=1e-5)


def test_llama3_bands():
    inv = ref_model.base_inv_freq(500000.0, 128)
    out = ref_model.llama3_inv_freq(inv, 8.0, 1.0, 4.0, 8192.0)
    wavelen = 2 * math.pi / inv
    assert np.array_equal(out[wavelen < 2048], inv[wavelen < 2048])
    np.testing.assert_allclose(out[wavelen > 8192], inv[wavelen > 8192] / 8.0)
    mid = (wavelen >= 2048) & (wavelen <= 8192)
    assert mid.any() and np.all(out[mid] < inv[mid]) and np.all(out[mid] > inv[mid] / 8.0)


def test_neox_on_hf_equals_norm_on_permuted_rows():
    rng = np.random.default_rng(0)
    T, H, D = 9, 3, 16
    x = rng.standard_normal((T, H, D))
    inv = ref_model.base_inv_freq(10000.0, D)
    pos = np.arange(T) + 5
    neox = ref_model.rope(x, pos, inv, "neox")
    perm = tc.llama_cpp_permute(np.arange(H * D), H).reshape(H, D)  # new row -> old row
    permuted_x = x.reshape(T, H * D)[:, perm.ravel()].reshape(T, H, D)
    norm = ref_model.rope(permuted_x, pos, inv, "norm")
    np.testing.assert_allclose(norm, neox.reshape(T, H * D)[:, perm.ravel()].reshape(T, H, D),
                               atol=1e-14)


@pytest.mark.parametrize("pairing", ["neox", "norm"])
def test_rope_depends_on_relative_position_only(pairing):
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((1, 1, 8)), rng.standard_normal((1, 1, 8))
    inv = ref_model.base_inv_freq(10000.0, 8)

    def dot(m, n):
        return float(np.sum(ref_model.rope(q, np.array([m]), inv, pairing) *
                            ref_model.rope(k, np.array([n]), inv, pairing)))

    assert dot(7, 3) == pytest.approx(dot(107, 103), abs=1e-12)
    assert dot(7, 3) != pytest.approx(dot(7, 4), abs=1e-6)
    # rotation preserves norms
    r = ref_model.rope(q, np.array([33]), inv, pairing)
    assert np.linalg.norm(r) == pytest.approx(np.linalg.norm(q), rel=1e-13)


@pytest.mark.parametrize("arch", ARCHS)
def test_attention_is_causal_and_log_softmax_normalised(tmp_path, arch):
    g, _ = write_pair(tmp_path, arch)
    rng = np.random.default_rng(11)
    ids = seq(rng, g.spec.vocab_size, 30)
    full = g.logprobs(ids, range(30))
    prefix = g.logprobs(ids[:17], range(17))
    np.testing.assert_allclose(full[:17], prefix, rtol=0, atol=1e-12)
    assert np.abs(full[17:] - g.logprobs(ids[:17] + seq(rng, 97, 13), range(30))[17:]).max() > 1e-3
    np.testing.assert_allclose(np.exp(full).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(full <= 0)


def test_gqa_equals_expanded_mha(tmp_path):
    _, gqa = write_pair(tmp_path, "qwen3", n_heads=4, n_kv_heads=2)
    # Expand each kv head to the query heads that read it: h -> h // 2.
    mha = ref_model.RefModel(gqa.spec, gqa.tok_embd, gqa.output_norm, gqa.output, [])
    mha.spec = ref_model.ModelSpec(**{**gqa.spec.__dict__, "n_kv_heads": 4})
    D = gqa.spec.head_dim
    rows = np.concatenate([np.arange(h // 2 * D, (h // 2 + 1) * D) for h in range(4)])
    for L in gqa.layers:
        weights = {n: getattr(L, n) for n in ref_model.Layer.__slots__}
        weights["wk"], weights["wv"] = L.wk[rows], L.wv[rows]
        mha.layers.append(ref_model.Layer(**weights))
    ids = seq(np.random.default_rng(2), 97, 25)
    np.testing.assert_allclose(mha.logprobs(ids, range(25)), gqa.logprobs(ids, range(25)),
                               rtol=0, atol=1e-12)


def test_tied_embeddings(tmp_path):
    g, h = write_pair(tmp_path, "qwen3", tied=True)
    assert g.spec.tied and h.spec.tied
    assert g.output is g.tok_embd and h.output is h.tok_embd


@pytest.mark.parametrize("gguf_type,atol", [(1, 2e-3), (30, 2e-2), (8, 2e-2)])
def test_reduced_precision_gguf_decodes_close_to_f32(tmp_path, gguf_type, atol):
    config, tensors = tc.random_hf_checkpoint("qwen2", 5, d_ff=64)
    md, gt = tc.gguf_from_hf(config, tensors)
    tc.write_gguf(tmp_path / "f32.gguf", md, gt, 0)
    tc.write_gguf(tmp_path / "low.gguf", md, gt, gguf_type)
    f32, low = GGUFFile(tmp_path / "f32.gguf"), GGUFFile(tmp_path / "low.gguf")
    name = "blk.1.ffn_down.weight"
    assert low.tensors[name].ggml_type == gguf_type
    a, b = f32.tensor(name), low.tensor(name)
    assert a.shape == b.shape == (32, 64)
    assert 0 < np.abs(a - b).max() < atol


def test_q8_0_block_decoding(tmp_path):
    # One 32-wide row with max |x| = 8: d = f16(8 / 127), q = round(x / d).
    row = np.arange(-16, 16, dtype=np.float32) / 2.0
    assert len(tc.quantize_q8_0(row)) == 34
    tc.write_gguf(tmp_path / "q.gguf", {"general.architecture": "x"}, {"w": row[None, :]}, 8)
    got = GGUFFile(tmp_path / "q.gguf").tensor("w")
    d = np.float64(np.float16(8.0 / 127.0))
    np.testing.assert_array_equal(got[0], np.round(row / d) * d)


def test_q4_0_block_decoding(tmp_path):
    # One 32-wide row whose largest |x| is -8: d = 1, codes 0..15 = x + 8,
    # read back as d · (code - 8), each value from its own nibble.
    row = np.concatenate([np.arange(-8, 8), np.arange(7, -9, -1)]).astype(np.float32)
    block = tc.quantize_q4_0(row)
    assert len(block) == 18 and block[2] == (0 | (15 << 4))
    tc.write_gguf(tmp_path / "q.gguf", {"general.architecture": "x"}, {"w": row[None, :]}, 2)
    np.testing.assert_array_equal(GGUFFile(tmp_path / "q.gguf").tensor("w")[0], row)


def test_bf16_and_f16_safetensors(tmp_path):
    x = np.array([[1.0, -2.5, 3.140625, 65504.0]], dtype=np.float32)
    tc.write_safetensors(tmp_path / "b.safetensors", {"x": x}, "BF16")
    tc.write_safetensors(tmp_path / "h.safetensors", {"x": x}, "F16")
    from safetensors_reader import SafetensorsFile
    np.testing.assert_array_equal(SafetensorsFile(tmp_path / "b.safetensors").tensor("x"),
                                  [[1.0, -2.5, 3.140625, 65280.0]])
    np.testing.assert_array_equal(SafetensorsFile(tmp_path / "h.safetensors").tensor("x"), x)


def test_sharded_hf_equals_single_file(tmp_path):
    config, tensors = tc.random_hf_checkpoint("llama", 9)
    tc.write_hf_dir(tmp_path / "one", config, tensors)
    tc.write_hf_dir(tmp_path / "three", config, tensors, shards=3)
    assert HFCheckpoint(tmp_path / "three").shard_count == 3
    one, three = ref_model.load_model(str(tmp_path / "one")), ref_model.load_model(
        str(tmp_path / "three"))
    ids = seq(np.random.default_rng(4), 97, 12)
    assert np.array_equal(one.logprobs(ids), three.logprobs(ids))


def test_truncated_gguf_is_an_error(tmp_path):
    config, tensors = tc.random_hf_checkpoint("qwen3", 2)
    md, gt = tc.gguf_from_hf(config, tensors)
    tc.write_gguf(tmp_path / "ok.gguf", md, gt)
    data = (tmp_path / "ok.gguf").read_bytes()
    for cut in (3, 10, 30, len(data) // 3, len(data) - 1):
        (tmp_path / "cut.gguf").write_bytes(data[:cut])
        with pytest.raises(GGUFError):
            GGUFFile(tmp_path / "cut.gguf")


def test_unused_tensor_is_reported(tmp_path):
    config, tensors = tc.random_hf_checkpoint("llama", 2)
    tensors["model.layers.0.self_attn.q_proj.bias"] = np.zeros(32, np.float32)
    tc.write_hf_dir(tmp_path / "hf", config, tensors)
    with pytest.raises(ValueError, match="not used"):
        ref_model.load_model(str(tmp_path / "hf"))


def test_score_semantics(tmp_path):
    m, _ = write_pair(tmp_path, "qwen3")
    q, items, labels = [5, 6, 7], [[8, 9], [], [10]], [1, 2, 50, 96]
    plain = ref_score.score(m, q, items, labels)
    soft = ref_score.score(m, q, items, labels, apply_softmax=True)
    first = ref_score.score(m, q, items, labels, item_first=True)
    full = m.logprobs([5, 6, 7, 8, 9])[0]
    np.testing.assert_allclose(plain["logprobs"][0], full[labels], atol=1e-15)
    np.testing.assert_allclose(plain["scores"][0], np.exp(full[labels]), atol=1e-15)
    np.testing.assert_allclose(plain["logprobs"][1], m.logprobs(q)[0][labels], atol=1e-15)
    np.testing.assert_allclose(np.sum(soft["scores"], axis=1), 1.0, atol=1e-14)
    assert soft["logprobs"] == plain["logprobs"]
    np.testing.assert_allclose(first["logprobs"][0], m.logprobs([8, 9, 5, 6, 7])[0][labels],
                               atol=1e-15)
    assert ref_score.score(m, q, [], labels) == {"scores": [], "logprobs": []}
