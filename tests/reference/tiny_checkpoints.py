"""tiny_checkpoints.py — writes small random checkpoints for the reference's self-tests.

The reference must be trustworthy before it judges the engine, so its
self-tests write the same random weights as a Hugging Face directory and as a
GGUF file laid out the way llama.cpp's convert_hf_to_gguf.py lays them out
(llama Q/K rows permuted for interleaved RoPE, llama3 rope scaling as a
rope_freqs tensor of divisors), then check that the reference reads both to
the same numbers. This writer is test scaffolding, not the project's model
maker (tools/lmscore-make-model).
"""

import json
import math
import os
import struct

import numpy as np

HF_TO_GGUF_LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def random_hf_checkpoint(arch, seed, n_layers=2, d_model=32, n_heads=4, n_kv_heads=2,
                         head_dim=8, d_ff=48, vocab=97, tied=False, rope_scaling=None,
                         rope_theta=10000.0):
    """(config.json dict, {HF tensor name: float32 array})."""
    rng = np.random.default_rng(seed)
    config = {
        "model_type": arch, "hidden_size": d_model, "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads, "num_key_value_heads": n_kv_heads,
        "head_dim": head_dim, "intermediate_size": d_ff, "vocab_size": vocab,
        "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": rope_theta,
        "tie_word_embeddings": tied,
    }
    if rope_scaling:
        config["rope_scaling"] = rope_scaling

    def mat(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[-1])).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    qd, kvd = n_heads * head_dim, n_kv_heads * head_dim
    t = {"model.embed_tokens.weight": mat(vocab, d_model), "model.norm.weight": norm(d_model)}
    if not tied:
        t["lm_head.weight"] = mat(vocab, d_model)
    for i in range(n_layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = norm(d_model)
        t[p + "self_attn.q_proj.weight"] = mat(qd, d_model)
        t[p + "self_attn.k_proj.weight"] = mat(kvd, d_model)
        t[p + "self_attn.v_proj.weight"] = mat(kvd, d_model)
        t[p + "self_attn.o_proj.weight"] = mat(d_model, qd)
        if arch == "qwen2":
            t[p + "self_attn.q_proj.bias"] = (0.5 * rng.standard_normal(qd)).astype(np.float32)
            t[p + "self_attn.k_proj.bias"] = (0.5 * rng.standard_normal(kvd)).astype(np.float32)
            t[p + "self_attn.v_proj.bias"] = (0.5 * rng.standard_normal(kvd)).astype(np.float32)
        if arch == "qwen3":
            t[p + "self_attn.q_norm.weight"] = norm(head_dim)
            t[p + "self_attn.k_norm.weight"] = norm(head_dim)
        t[p + "post_attention_layernorm.weight"] = norm(d_model)
        t[p + "mlp.gate_proj.weight"] = mat(d_ff, d_model)
        t[p + "mlp.up_proj.weight"] = mat(d_ff, d_model)
        t[p + "mlp.down_proj.weight"] = mat(d_model, d_ff)
    return config, t


def llama_cpp_permute(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: within each head, row i
    (first half) and row i + d/2 (second half) become rows 2i and 2i+1."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def llama_cpp_rope_factors(config):
    """convert_hf_to_gguf.py's LlamaModel rope_freqs tensor (divisors of the
    base frequencies) for a llama3 rope_scaling."""
    rs = config["rope_scaling"]
    head_dim = config["head_dim"]
    base = config["rope_theta"]
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old_ctx = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_ctx / low, old_ctx / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old_ctx / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def gguf_from_hf(config, tensors):
    """(metadata, {GGUF tensor name: float32 array}) as llama.cpp would write them."""
    arch = config["model_type"]
    md = {
        "general.architecture": arch, "general.name": "reference-selftest",
        f"{arch}.block_count": config["num_hidden_layers"],
        f"{arch}.context_length": config["max_position_embeddings"],
        f"{arch}.embedding_length": config["hidden_size"],
        f"{arch}.feed_forward_length": config["intermediate_size"],
        f"{arch}.attention.head_count": config["num_attention_heads"],
        f"{arch}.attention.head_count_kv": config["num_key_value_heads"],
        f"{arch}.attention.key_length": config["head_dim"],
        f"{arch}.attention.value_length": config["head_dim"],
        f"{arch}.rope.freq_base": float(config["rope_theta"]),
        f"{arch}.attention.layer_norm_rms_epsilon": float(config["rms_norm_eps"]),
    }
    out = {"token_embd.weight": tensors["model.embed_tokens.weight"],
           "output_norm.weight": tensors["model.norm.weight"]}
    if "lm_head.weight" in tensors and not config["tie_word_embeddings"]:
        out["output.weight"] = tensors["lm_head.weight"]
    rs = config.get("rope_scaling")
    if rs and rs["rope_type"] == "linear":
        md[f"{arch}.rope.scaling.type"] = "linear"
        md[f"{arch}.rope.scaling.factor"] = float(rs["factor"])
    elif rs and rs["rope_type"] == "llama3":
        out["rope_freqs.weight"] = llama_cpp_rope_factors(config)
    for i in range(config["num_hidden_layers"]):
        for hf_suffix, gguf_suffix in HF_TO_GGUF_LAYER.items():
            name = f"model.layers.{i}.{hf_suffix}"
            if name not in tensors:
                continue
            w = tensors[name]
            if arch == "llama" and hf_suffix == "self_attn.q_proj.weight":
                w = llama_cpp_permute(w, config["num_attention_heads"])
            if arch == "llama" and hf_suffix == "self_attn.k_proj.weight":
                w = llama_cpp_permute(w, config["num_key_value_heads"])
            out[f"blk.{i}.{gguf_suffix}"] = w
    return md, out


# ------------------------------------------------------------------ writers


def _gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _gguf_value(v):
    if isinstance(v, bool):
        return struct.pack("<I?", 7, v)
    if isinstance(v, int):
        return struct.pack("<II", 4, v)
    if isinstance(v, float):
        return struct.pack("<If", 6, v)
    if isinstance(v, str):
        return struct.pack("<I", 8) + _gguf_string(v)
    raise TypeError(type(v))


def quantize_q8_0(x):
    """ggml's Q8_0: per 32 values, d = max|x| / 127 (stored f16), q = round(x / d)."""
    blocks = x.astype(np.float32).reshape(-1, 32)
    d = (np.abs(blocks).max(axis=1) / 127.0).astype(np.float16)
    inv = np.where(d == 0, 0.0, 1.0 / d.astype(np.float32))
    q = np.round(blocks * inv[:, None]).astype(np.int8)
    out = bytearray()
    for di, qi in zip(d, q):
        out += di.tobytes() + qi.tobytes()
    return bytes(out)


def quantize_q4_0(x):
    """ggml's Q4_0: per 32 values, the one of largest |x| is m, d = m / -8
    (stored f16), q = min(15, trunc(x / d + 8.5)); byte j holds q[j] in its
    low nibble and q[j + 16] in its high one."""
    blocks = x.astype(np.float32).reshape(-1, 32)
    m = blocks[np.arange(len(blocks)), np.abs(blocks).argmax(axis=1)]
    d = (m / -8.0).astype(np.float32)
    inv = np.where(d == 0, 0.0, 1.0 / np.where(d == 0, 1.0, d)).astype(np.float32)
    q = np.minimum(15, np.trunc(blocks * inv[:, None] + 8.5)).astype(np.uint8)
    out = bytearray()
    for di, qi in zip(d.astype(np.float16), q):
        out += di.tobytes() + (qi[:16] | (qi[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def _encode(x, ggml_type):
    if ggml_type == 0:
        return x.astype("<f4").tobytes()
    if ggml_type == 1:
        return x.astype("<f2").tobytes()
    if ggml_type == 30:  # bf16 by truncation, which is exact for what the tests compare
        return (x.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
    if ggml_type == 8:
        return quantize_q8_0(x)
    if ggml_type == 2:
        return quantize_q4_0(x)
    raise ValueError(ggml_type)


def write_gguf(path, metadata, tensors, ggml_type=0, alignment=32):
    """Matrices in `ggml_type`, 1-D tensors in F32 (as llama.cpp keeps norms)."""
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for k, v in metadata.items():
        header += _gguf_string(k) + _gguf_value(v)
    blobs, offset = [], 0
    for name, x in tensors.items():
        t = ggml_type if x.ndim == 2 else 0
        blob = _encode(x, t)
        header += _gguf_string(name) + struct.pack("<I", x.ndim)
        header += b"".join(struct.pack("<Q", d) for d in reversed(x.shape))
        header += struct.pack("<IQ", t, offset)
        pad = -len(blob) % alignment
        blobs.append(blob + b"\0" * pad)
        offset += len(blob) + pad
    header += b"\0" * (-len(header) % alignment)
    with open(path, "wb") as f:
        f.write(header + b"".join(blobs))


def write_safetensors(path, tensors, dtype="F32"):
    header, blobs, offset = {}, [], 0
    for name, x in tensors.items():
        if dtype == "F32":
            blob = x.astype("<f4").tobytes()
        elif dtype == "F16":
            blob = x.astype("<f2").tobytes()
        else:  # BF16 by truncation
            blob = (x.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(x.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_hf_dir(directory, config, tensors, shards=1, dtype="F32"):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f)
    if shards == 1:
        write_safetensors(os.path.join(directory, "model.safetensors"), tensors, dtype)
        return
    names = list(tensors)
    weight_map = {}
    for s in range(shards):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[s::shards]}
        write_safetensors(os.path.join(directory, fname), part, dtype)
        weight_map.update({n: fname for n in part})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
