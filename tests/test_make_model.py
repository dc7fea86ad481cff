"""test_make_model.py — checks the model maker (tools/lmscore-make-model) and
the models the build made with it (cmake target `models`).

The GGUF and safetensors readers here are deliberately small and separate
from both the engine's and tests/reference's: they check the files against
the two specs (magic, version, alignment, offsets that are in bounds,
aligned and non-overlapping, a header that covers the data exactly) and
decode F32/F16/BF16/Q8_0 with numpy.

Run: LMSCORE_BUILD_DIR=build /usr/bin/python3 -m pytest tests/test_make_model.py
(after `cmake --build build --target lmscore-make-model models`).
"""

import json
import math
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

# From tests/reference (none of it is the maker's C code): the HF -> GGUF
# layer-name map and convert_hf_to_gguf's LlamaModel.permute, and the numpy
# forward pass that shows the weights make informative scores.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
import ref_model  # noqa: E402
from tiny_checkpoints import HF_TO_GGUF_LAYER, llama_cpp_permute  # noqa: E402

BUILD = os.environ.get("LMSCORE_BUILD_DIR", "build")
MAKER = os.path.join(BUILD, "tools", "lmscore-make-model")
TOKENIZERS = os.path.join(BUILD, "tokenizers")
MODELS = os.path.join(BUILD, "models")

# model -> (architecture, tokenizer directory name)
PRESETS = {
    "tiny-qwen3": ("qwen3", "qwen3"),
    "tiny-qwen2": ("qwen2", "qwen3"),
    "tiny-llama": ("llama", "llama2"),
    "tiny-llama3": ("llama", "llama3"),
}

# ----------------------------------------------------------------- readers

GGUF_SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4",
                7: "<u1", 10: "<u8", 11: "<i8", 12: "<f8"}
GGUF_STRING, GGUF_ARRAY = 8, 9
GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30


class Gguf:
    """A GGUF v3 file, checked against the spec as it is read."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.raw = f.read()
        self.pos = 0
        assert self.raw[:4] == b"GGUF", "bad magic"
        self.pos = 4
        assert self.u32() == 3, "not GGUF v3"
        n_tensors, n_kv = self.u64(), self.u64()
        self.kv, self.kv_types = {}, {}
        for _ in range(n_kv):
            key = self.string()
            assert key not in self.kv, f"duplicate key {key}"
            vtype = self.u32()
            self.kv_types[key] = vtype
            self.kv[key] = self.value(vtype)
        self.alignment = self.kv.get("general.alignment", 32)
        self.infos = {}
        for _ in range(n_tensors):
            name = self.string()
            assert name not in self.infos, f"duplicate tensor {name}"
            n_dims = self.u32()
            assert 1 <= n_dims <= 4
            ne = [self.u64() for _ in range(n_dims)]
            ggml_type, offset = self.u32(), self.u64()
            self.infos[name] = (ne, ggml_type, offset)
        self.order = list(self.infos)
        self.data_start = -(-self.pos // self.alignment) * self.alignment
        spans = []
        for name, (ne, ggml_type, offset) in self.infos.items():
            assert offset % self.alignment == 0, f"{name} misaligned"
            size = self.nbytes(ne, ggml_type)
            assert self.data_start + offset + size <= len(self.raw), f"{name} out of bounds"
            spans.append((offset, offset + size, name))
        spans.sort()
        for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
            assert end <= start, f"{a} overlaps {b}"

    def take(self, n):
        assert self.pos + n <= len(self.raw), "truncated"
        b = self.raw[self.pos:self.pos + n]
        self.pos += n
        return b

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        return self.take(self.u64()).decode("utf-8")

    def value(self, vtype):
        if vtype == GGUF_STRING:
            return self.string()
        if vtype == GGUF_ARRAY:
            etype, n = self.u32(), self.u64()
            if etype == GGUF_STRING:
                return [self.string() for _ in range(n)]
            dt = np.dtype(GGUF_SCALARS[etype])
            return np.frombuffer(self.take(n * dt.itemsize), dtype=dt)
        v = np.frombuffer(self.take(np.dtype(GGUF_SCALARS[vtype]).itemsize),
                          dtype=GGUF_SCALARS[vtype])[0]
        return bool(v) if vtype == 7 else v.item()

    @staticmethod
    def nbytes(ne, ggml_type):
        n = math.prod(ne)
        if ggml_type == GGML_Q8_0:
            assert ne[0] % 32 == 0
            return n // 32 * 34
        return n * {GGML_F32: 4, GGML_F16: 2, GGML_BF16: 2}[ggml_type]

    def raw_tensor(self, name):
        ne, ggml_type, offset = self.infos[name]
        start = self.data_start + offset
        return self.raw[start:start + self.nbytes(ne, ggml_type)], ne, ggml_type

    def tensor(self, name):
        """float32, in PyTorch order (ne reversed)."""
        data, ne, ggml_type = self.raw_tensor(name)
        if ggml_type == GGML_F32:
            x = np.frombuffer(data, "<f4")
        elif ggml_type == GGML_F16:
            x = np.frombuffer(data, "<f2").astype(np.float32)
        elif ggml_type == GGML_BF16:
            x = (np.frombuffer(data, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            blocks = np.frombuffer(data, np.uint8).reshape(-1, 34)
            d = blocks[:, :2].copy().view("<f2").astype(np.float32)
            q = blocks[:, 2:].view(np.int8).astype(np.float32)
            x = (d * q).reshape(-1)
        return x.reshape(list(reversed(ne)))

    def type_of(self, name):
        return self.infos[name][1]


def read_safetensors(path):
    """{name: float32 array}, checking the header covers the data exactly."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0, "header not padded to 8 bytes"
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    header.pop("__metadata__", None)
    spans, out = [], {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        width = {"F32": 4, "F16": 2, "BF16": 2}[info["dtype"]]
        assert end - start == math.prod(info["shape"]) * width, f"{name}: size"
        spans.append((start, end))
        buf = data[start:end]
        if info["dtype"] == "F32":
            x = np.frombuffer(buf, "<f4")
        elif info["dtype"] == "F16":
            x = np.frombuffer(buf, "<f2").astype(np.float32)
        else:
            x = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        out[name] = x.reshape(info["shape"])
    spans.sort()
    assert spans[0][0] == 0 and spans[-1][1] == len(data), "data not covered exactly"
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])), "gap or overlap"
    return out


def read_hf(directory):
    index = os.path.join(directory, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(directory, "model.safetensors"))
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        part = read_safetensors(os.path.join(directory, shard))
        assert {n for n, s in weight_map.items() if s == shard} == set(part)
        tensors.update(part)
    return tensors


# ---------------------------------------------------------- helpers

def gguf_name(hf_name):
    fixed = {"model.embed_tokens.weight": "token_embd.weight",
             "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}
    if hf_name in fixed:
        return fixed[hf_name]
    _, _, layer, rest = hf_name.split(".", 3)
    return f"blk.{layer}.{HF_TO_GGUF_LAYER[rest]}"


def make(tmp_path, *flags, check=True):
    cmd = [MAKER, "--tokenizers", TOKENIZERS, *flags]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert "Sanitizer" not in r.stderr, r.stderr  # also on the error paths
    if check:
        assert r.returncode == 0, r.stderr
    return r


def model_path(name):
    path = os.path.join(MODELS, name)
    assert os.path.exists(path), f"{path} missing: build the `models` target first"
    return path


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# A small llama (Llama 2 vocabulary) that is quick to write twice.
SMALL = ["--preset", "tiny-llama", "--layers", "1", "--hidden", "32", "--heads", "2",
         "--kv-heads", "1", "--head-dim", "16", "--ffn", "64"]

# ------------------------------------------------------------------ tests


def test_same_seed_same_bytes_other_seed_other_weights(tmp_path):
    outs = {}
    for tag, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        make(tmp_path, *SMALL, "--seed", seed, "--gguf", f"{tag}.gguf", "--hf", f"{tag}-hf")
        outs[tag] = {f: open(tmp_path / p, "rb").read() for f, p in
                     (("gguf", f"{tag}.gguf"), ("st", f"{tag}-hf/model.safetensors"),
                      ("config", f"{tag}-hf/config.json"))}
    assert outs["a"] == outs["b"]
    assert outs["a"]["config"] == outs["c"]["config"]
    assert outs["a"]["gguf"] != outs["c"]["gguf"] and outs["a"]["st"] != outs["c"]["st"]
    a, c = Gguf(tmp_path / "a.gguf"), Gguf(tmp_path / "c.gguf")
    assert a.raw[:a.data_start] == c.raw[:c.data_start]  # same metadata and layout
    for name in a.order:  # every tensor is drawn from the seed
        assert not np.array_equal(a.tensor(name), c.tensor(name)), name


def test_output_does_not_depend_on_thread_count(tmp_path):
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        subprocess.run([MAKER, "--tokenizers", TOKENIZERS, *SMALL, "--gguf", f"t{threads}.gguf"],
                       check=True, cwd=tmp_path, env=env, capture_output=True)
    assert (tmp_path / "t1.gguf").read_bytes() == (tmp_path / "t2.gguf").read_bytes()


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_gguf_metadata_matches_config(name):
    arch, _ = PRESETS[name]
    g = Gguf(model_path(name + ".gguf"))
    cfg = load_json(os.path.join(model_path(name + "-hf"), "config.json"))
    kv = g.kv
    assert kv["general.architecture"] == arch == cfg["model_type"]
    assert kv["general.name"] == name and kv["general.alignment"] == 32
    expect = {
        "block_count": cfg["num_hidden_layers"], "context_length": cfg["max_position_embeddings"],
        "embedding_length": cfg["hidden_size"], "feed_forward_length": cfg["intermediate_size"],
        "attention.head_count": cfg["num_attention_heads"],
        "attention.head_count_kv": cfg["num_key_value_heads"],
        "attention.key_length": cfg["head_dim"], "attention.value_length": cfg["head_dim"],
    }
    for key, value in expect.items():
        assert kv[f"{arch}.{key}"] == value, key
        assert g.kv_types[f"{arch}.{key}"] == 4, f"{key} is not a uint32"
    assert np.float32(kv[f"{arch}.rope.freq_base"]) == np.float32(cfg["rope_theta"])
    assert np.float32(kv[f"{arch}.attention.layer_norm_rms_epsilon"]) == np.float32(
        cfg["rms_norm_eps"])
    assert cfg["architectures"] == [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                                     "qwen3": "Qwen3ForCausalLM"}[arch]]
    assert g.tensor("token_embd.weight").shape == (cfg["vocab_size"], cfg["hidden_size"])
    assert ("output.weight" in g.infos) == (not cfg["tie_word_embeddings"])
    file_type = {"float32": 0, "float16": 1, "bfloat16": 32}[cfg["torch_dtype"]]
    assert kv["general.file_type"] == file_type


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_gguf_and_hf_hold_the_same_weights(name):
    arch, _ = PRESETS[name]
    g = Gguf(model_path(name + ".gguf"))
    hf_dir = model_path(name + "-hf")
    hf = read_hf(hf_dir)
    cfg = load_json(os.path.join(hf_dir, "config.json"))
    expected_gguf = {gguf_name(n) for n in hf}
    if cfg.get("rope_scaling"):
        expected_gguf.add("rope_freqs.weight")
    assert set(g.infos) == expected_gguf
    for hf_name, w in hf.items():
        gw = g.tensor(gguf_name(hf_name))
        if arch == "llama" and hf_name.endswith(("q_proj.weight", "k_proj.weight")):
            heads = cfg["num_attention_heads" if "q_proj" in hf_name else "num_key_value_heads"]
            w = llama_cpp_permute(w, heads)
            assert not np.array_equal(gw, hf[hf_name]), "llama Q/K rows not permuted"
        assert gw.shape == w.shape, hf_name
        assert np.array_equal(gw, w), f"{hf_name}: GGUF and HF differ"
        if w.ndim == 1:  # llama.cpp keeps norms and biases in F32
            assert g.type_of(gguf_name(hf_name)) == GGML_F32, hf_name


def test_llama3_rope_freqs_follow_hf_rope_scaling():
    g = Gguf(model_path("tiny-llama3.gguf"))
    cfg = load_json(os.path.join(model_path("tiny-llama3-hf"), "config.json"))
    rs = cfg["rope_scaling"]
    assert rs["rope_type"] == "llama3"
    dim = cfg["head_dim"]
    inv_freq = 1.0 / cfg["rope_theta"] ** (np.arange(0, dim, 2) / dim)
    # transformers' _compute_llama3_parameters, in float64
    old = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / rs["low_freq_factor"], old / rs["high_freq_factor"]
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > low_wavelen, inv_freq / rs["factor"], inv_freq)
    smooth = (old / wavelen - rs["low_freq_factor"]) / (rs["high_freq_factor"]
                                                        - rs["low_freq_factor"])
    smoothed = (1 - smooth) * scaled / rs["factor"] + smooth * scaled
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    hf_inv_freq = np.where(medium, smoothed, scaled)
    factors = g.tensor("rope_freqs.weight").astype(np.float64)
    assert g.type_of("rope_freqs.weight") == GGML_F32
    np.testing.assert_allclose(inv_freq / factors, hf_inv_freq, rtol=1e-6)
    assert factors.min() == 1.0 and factors.max() == rs["factor"]
    assert ((factors > 1) & (factors < rs["factor"])).any(), "no smoothed band"


def test_linear_rope_scaling_metadata(tmp_path):
    make(tmp_path, *SMALL, "--rope-scaling", "linear", "--rope-factor", "4",
         "--gguf", "lin.gguf", "--hf", "lin-hf")
    kv = Gguf(tmp_path / "lin.gguf").kv
    assert kv["llama.rope.scaling.type"] == "linear" and kv["llama.rope.scaling.factor"] == 4.0
    assert load_json(tmp_path / "lin-hf" / "config.json")["rope_scaling"] == {
        "factor": 4.0, "rope_type": "linear"}


def quantize_q8_0(x):
    """gguf-py's Q8_0 (numpy), independently of the maker's C."""
    blocks = x.reshape(-1, 32).astype(np.float32)
    d = np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)
    v = blocks * inv
    a = np.abs(v)
    q = np.sign(v) * (np.floor(a) + np.floor(2 * (a - np.floor(a))))  # round half away
    return np.concatenate([d.astype("<f2").view(np.uint8),
                           q.astype(np.int8).view(np.uint8)], axis=1).tobytes()


def test_q8_0_is_ggml_quantisation_of_the_f32_weights():
    q8 = Gguf(model_path("tiny-qwen3-q8_0.gguf"))
    f32 = Gguf(model_path("tiny-qwen3.gguf"))
    assert q8.kv["general.file_type"] == 7
    assert set(q8.infos) == set(f32.infos)
    for name in f32.order:
        w = f32.tensor(name)
        if w.ndim == 1:
            assert q8.type_of(name) == GGML_F32 and np.array_equal(q8.tensor(name), w)
            continue
        assert q8.type_of(name) == GGML_Q8_0, name
        assert q8.raw_tensor(name)[0] == quantize_q8_0(w), f"{name}: not ggml's Q8_0"
        # half a step of rounding, plus up to 127 steps times the f16 rounding of the step
        step = np.abs(w.reshape(-1, 32)).max(axis=1, keepdims=True) / 127
        err = np.abs(q8.tensor(name).reshape(-1, 32) - w.reshape(-1, 32))
        assert (err <= step * (0.5 + 127 * 2.0**-11) * (1 + 1e-6)).all(), name


def test_bf16_variant_rounds_the_f32_weights():
    f32 = Gguf(model_path("tiny-qwen3.gguf"))
    bf = Gguf(model_path("tiny-qwen3-bf16.gguf"))
    hf = read_hf(model_path("tiny-qwen3-bf16-hf"))
    for name in f32.order:
        w = f32.tensor(name)
        bits = w.view(np.uint32).astype(np.uint64)
        rne = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32)
        assert np.array_equal(bf.tensor(name), rne.view(np.float32)), name
        assert bf.type_of(name) == (GGML_F32 if w.ndim == 1 else GGML_BF16)
    for hf_name, w in hf.items():
        assert np.array_equal(w, bf.tensor(gguf_name(hf_name))), hf_name


def test_sharded_hf_equals_single_file():
    directory = model_path("tiny-llama-sharded-hf")
    index = load_json(os.path.join(directory, "model.safetensors.index.json"))
    shards = sorted(set(index["weight_map"].values()))
    assert shards == [f"model-0000{k}-of-00003.safetensors" for k in (1, 2, 3)]
    sharded, single = read_hf(directory), read_hf(model_path("tiny-llama-hf"))
    assert set(sharded) == set(single) == set(index["weight_map"])
    assert index["metadata"]["total_size"] == sum(w.nbytes for w in single.values())
    for name, w in single.items():
        assert np.array_equal(sharded[name], w), name


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_tokenizer_metadata_matches_tokenizer_json(name):
    _, tok = PRESETS[name]
    kv = Gguf(model_path(name + ".gguf")).kv
    hf_dir = model_path(name + "-hf")
    for f in ("tokenizer.json", "tokenizer_config.json"):  # copied byte for byte
        with open(os.path.join(TOKENIZERS, tok, f), "rb") as a, open(
                os.path.join(hf_dir, f), "rb") as b:
            assert a.read() == b.read(), f
    tj = load_json(os.path.join(hf_dir, "tokenizer.json"))
    tc = load_json(os.path.join(hf_dir, "tokenizer_config.json"))
    cfg = load_json(os.path.join(hf_dir, "config.json"))
    by_id = {i: t for t, i in tj["model"]["vocab"].items()}
    added = {a["id"]: a for a in tj["added_tokens"]}
    by_id.update({i: a["content"] for i, a in added.items()})
    tokens, types = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.token_type"]
    assert len(tokens) == len(types) == cfg["vocab_size"]
    assert types.dtype == np.int32
    for i, t in enumerate(tokens):
        if i in by_id:
            assert t == by_id[i], i
        else:
            assert t == f"[PAD{i}]" and types[i] == 5, i
    spm = tj["model"].get("byte_fallback", False)
    for i, a in added.items():
        if spm and a["content"] == tj["model"]["unk_token"]:
            continue  # SentencePiece's unknown piece has a type of its own
        assert types[i] == (3 if a["special"] or a["content"].startswith("<|") else 4), a
    assert kv["tokenizer.ggml.model"] == ("llama" if spm else "gpt2")
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    if spm:
        assert "tokenizer.ggml.merges" not in kv
        scores = kv["tokenizer.ggml.scores"]
        assert len(scores) == len(tokens)
        assert all(types[i] == 6 for i, t in enumerate(tokens) if t.startswith("<0x"))
        assert types[tj["model"]["vocab"][tj["model"]["unk_token"]]] == 2
        # higher score = earlier merge, so llama.cpp's SPM merges in HF's order
        first_rank = {}
        for r, m in enumerate(merges):
            first_rank.setdefault(tj["model"]["vocab"][m.replace(" ", "")], r)
        for i, r in first_rank.items():
            assert scores[i] == -r, tokens[i]
    else:
        assert "tokenizer.ggml.scores" not in kv
        assert kv["tokenizer.ggml.merges"] == merges
        assert kv["tokenizer.ggml.pre"] == {"qwen3": "qwen2", "llama3": "llama-bpe"}[tok]

    def special(key):
        v = tc.get(key)
        return v["content"] if isinstance(v, dict) else v

    ids = {t: i for i, t in by_id.items()}
    for key, gguf_key in (("eos_token", "eos_token_id"), ("pad_token", "padding_token_id"),
                          ("bos_token", "bos_token_id")):
        if special(key):
            assert kv["tokenizer.ggml." + gguf_key] == ids[special(key)], key
    if tok == "qwen3":  # Qwen's config.json names <|endoftext|> as BOS
        assert kv["tokenizer.ggml.bos_token_id"] == ids["<|endoftext|>"] == 151643
    assert kv["tokenizer.ggml.bos_token_id"] == cfg["bos_token_id"]
    assert kv["tokenizer.ggml.eos_token_id"] == cfg["eos_token_id"]
    post = tj.get("post_processor") or {}
    template_bos = post.get("type") == "TemplateProcessing" and "SpecialToken" in post["single"][0]
    assert kv["tokenizer.ggml.add_bos_token"] == tc.get("add_bos_token", template_bos)
    assert kv["tokenizer.ggml.add_eos_token"] is tc.get("add_eos_token", False)


def test_weight_scales():
    hf = read_hf(model_path("tiny-qwen3-hf"))
    d = hf["model.embed_tokens.weight"].shape[1]
    embd = hf["model.embed_tokens.weight"]
    assert abs(embd.std() - 4 / math.sqrt(d)) < 0.01 * 4 / math.sqrt(d)
    assert abs(embd.mean()) < 1e-3
    q = hf["model.layers.0.self_attn.q_proj.weight"]
    assert abs(q.std() * math.sqrt(q.shape[1]) - 1) < 0.05
    down = hf["model.layers.0.mlp.down_proj.weight"]
    assert abs(down.std() * math.sqrt(down.shape[1]) - 1) < 0.05
    norms = np.concatenate([w for n, w in hf.items() if "norm" in n])
    assert abs(norms.mean() - 1) < 0.02 and 0.07 < norms.std() < 0.13
    a, b = hf["model.layers.0.mlp.up_proj.weight"], hf["model.layers.1.mlp.up_proj.weight"]
    assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.01  # streams are independent


def test_projection_std_scales_the_projections_only(tmp_path):
    make(tmp_path, *SMALL, "--hf", "a-hf")
    make(tmp_path, *SMALL, "--projection-std", "0.3", "--hf", "b-hf")
    a, b = read_hf(tmp_path / "a-hf"), read_hf(tmp_path / "b-hf")
    assert a.keys() == b.keys()
    projections = [n for n in a if n.endswith("_proj.weight")]
    assert len(projections) == 7
    for name in a:
        if name in projections:  # the same draws at std 0.3 instead of 1/sqrt(fan_in)
            fan_in = a[name].shape[1]
            np.testing.assert_allclose(b[name], a[name] * 0.3 * math.sqrt(fan_in), rtol=1e-6)
            assert abs(b[name].std() - 0.3) < 0.02
        else:
            assert np.array_equal(a[name], b[name]), name


def test_scores_are_informative():
    """With these scales every layer moves the residual stream and the
    next-token distributions are neither flat nor one-hot, and differ between
    contexts — so engine-vs-reference comparisons test something."""
    model = ref_model.load_model(model_path("tiny-qwen3.gguf"))
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 151643, size=48)
    trace = []
    model.hidden_states(ids, trace=trace)
    for before, after in zip(trace, trace[1:]):
        change = np.linalg.norm(after - before) / np.linalg.norm(before)
        assert change > 0.2, "a layer barely changes the residual stream"
    lp = model.logprobs(ids, positions=range(len(ids)))
    p = np.exp(lp)
    entropy = -(p * lp).sum(axis=1)
    assert entropy.min() > 0.05 and entropy.mean() > 2.0
    assert entropy.max() < 0.9 * math.log(lp.shape[1])
    assert np.std(lp[:, 1000:1010], axis=0).min() > 0.5  # a label's score varies by context


@pytest.mark.parametrize("flags, message", [
    (["--preset", "nope", "--gguf", "x.gguf"], "unknown preset 'nope'"),
    (["--heads", "3", "--kv-heads", "2", "--gguf", "x.gguf"], "must be a multiple of kv-heads"),
    (["--head-dim", "15", "--gguf", "x.gguf"], "must be even"),
    (["--layers", "abc", "--gguf", "x.gguf"], "--layers wants an integer"),
    (["--dtype", "q3_K", "--gguf", "x.gguf"], "unknown dtype 'q3_K'"),
    (["--vocab-size", "1000", "--gguf", "x.gguf"], "smaller than the tokenizer's 151669 ids"),
    (["--vocab-from", "/nonexistent/tok", "--gguf", "x.gguf"], "cannot read /nonexistent/tok"),
    (["--preset", "tiny-llama", "--vocab-from", "llama3", "--vocab-size", "128256",
      "--gguf", "x.gguf"], "needs --tokenizer-pre"),
    (["--vocab-size", "0", "--gguf", "x.gguf"], "--vocab-size wants an integer"),
    (["--preset", "tiny-llama", "--shards", "99", "--hf", "x-hf"], "99 shards for"),
    (["--rope-scaling", "yarn", "--gguf", "x.gguf"], "unknown rope scaling 'yarn'"),
    (["--projection-std", "0", "--gguf", "x.gguf"], "--projection-std wants a positive number"),
    ([], "nothing to write"),
])
def test_bad_requests_fail_precisely_and_write_nothing(tmp_path, flags, message):
    r = make(tmp_path, *flags, check=False)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "x.gguf")
    assert not os.path.exists(tmp_path / "x-hf" / "config.json")
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
