"""ref_model.py — the reference forward pass, in float64 numpy.

Written from the architectures' definitions (Hugging Face transformers'
modeling_llama / modeling_qwen2 / modeling_qwen3 and llama.cpp's GGUF
conventions), not from the engine: every layer is the textbook
pre-norm block

    x += Wo · attn(rope(norm_qk(Wq·rms(x) + bq)), rope(norm_qk(Wk·rms(x) + bk)), Wv·rms(x) + bv)
    x += Wdown · (silu(Wgate·rms(x)) * Wup·rms(x))

with causal attention, GQA (query head h reads kv head h // (n_heads/n_kv_heads)),
q/k bias for qwen2, a per-head RMSNorm of q and k before RoPE for qwen3, and a
final RMSNorm + LM head (the embedding when tied).

RoPE pairing is the one each format implies, applied as written, never by
un-permuting weights: Hugging Face checkpoints rotate (i, i + d/2) ("neox",
rotate_half); GGUF qwen2/qwen3 also rotate (i, i + d/2); GGUF llama rotates
(2i, 2i+1) ("norm") because llama.cpp's converter permuted the Q/K rows.
The angle of pair i at position p is p * inv_freq[i], with
inv_freq[i] = theta^(-2i/d) adjusted by the checkpoint's rope scaling
(linear: / factor; llama3: HF's smooth band rule, or GGUF's rope_freqs tensor
as a divisor).
"""

import math
import os
from dataclasses import dataclass

import numpy as np

from gguf_reader import GGUFFile
from safetensors_reader import HFCheckpoint

ARCHS = ("llama", "qwen2", "qwen3")


@dataclass
class ModelSpec:
    arch: str
    fmt: str  # "gguf" or "hf"
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    context_length: int
    rms_eps: float
    rope_pairing: str  # "neox" or "norm"
    inv_freq: np.ndarray  # [head_dim / 2], scaling folded in
    tied: bool


class Layer:
    """One block's weights, float64, PyTorch (out, in) layout."""

    __slots__ = ("attn_norm", "wq", "wk", "wv", "bq", "bk", "bv", "q_norm", "k_norm", "wo",
                 "ffn_norm", "w_gate", "w_up", "w_down")

    def __init__(self, **weights):
        for name in self.__slots__:
            setattr(self, name, weights.get(name))


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def silu(x):
    return x / (1.0 + np.exp(-x))


def log_softmax(logits):
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def rope(x, positions, inv_freq, pairing):
    """x: [T, heads, head_dim]; rotates each pair by position * inv_freq[i]."""
    angles = positions.astype(np.float64)[:, None] * inv_freq[None, :]  # [T, d/2]
    cos = np.cos(angles)[:, None, :]
    sin = np.sin(angles)[:, None, :]
    if pairing == "neox":
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
    if pairing == "norm":
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out
    raise ValueError(f"unknown rope pairing {pairing}")


def base_inv_freq(theta, head_dim):
    return 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)


def llama3_inv_freq(inv_freq, factor, low_freq_factor, high_freq_factor, original_max_pos):
    """transformers' _compute_llama3_parameters: long wavelengths are slowed by
    `factor`, short ones kept, the band in between interpolated."""
    low_freq_wavelen = original_max_pos / low_freq_factor
    high_freq_wavelen = original_max_pos / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (original_max_pos / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= high_freq_wavelen) & (wavelen <= low_freq_wavelen)
    return np.where(medium, smoothed, scaled)


class RefModel:
    def __init__(self, spec, tok_embd, output_norm, output, layers):
        self.spec = spec
        self.tok_embd = tok_embd
        self.output_norm = output_norm
        self.output = output
        self.layers = layers

    def hidden_states(self, ids, trace=None):
        """Final-normed hidden states [T, d_model] of a token sequence.
        With a list as `trace`, appends the residual stream after the
        embedding and after every layer (for layer-by-layer comparisons)."""
        s = self.spec
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or len(ids) == 0:
            raise ValueError("need a non-empty 1-D token sequence")
        if ids.min() < 0 or ids.max() >= s.vocab_size:
            raise ValueError("token id out of range")
        T = len(ids)
        positions = np.arange(T)
        causal = np.triu(np.full((T, T), -np.inf), k=1)
        group = s.n_heads // s.n_kv_heads
        x = self.tok_embd[ids].copy()
        if trace is not None:
            trace.append(x.copy())
        for L in self.layers:
            h = rms_norm(x, L.attn_norm, s.rms_eps)
            q = h @ L.wq.T
            k = h @ L.wk.T
            v = h @ L.wv.T
            if L.bq is not None:
                q, k, v = q + L.bq, k + L.bk, v + L.bv
            q = q.reshape(T, s.n_heads, s.head_dim)
            k = k.reshape(T, s.n_kv_heads, s.head_dim)
            v = v.reshape(T, s.n_kv_heads, s.head_dim)
            if L.q_norm is not None:
                q = rms_norm(q, L.q_norm, s.rms_eps)
                k = rms_norm(k, L.k_norm, s.rms_eps)
            q = rope(q, positions, s.inv_freq, s.rope_pairing)
            k = rope(k, positions, s.inv_freq, s.rope_pairing)
            kv_of_head = np.arange(s.n_heads) // group
            k_h = k[:, kv_of_head, :].transpose(1, 0, 2)  # [H, T, hd]
            v_h = v[:, kv_of_head, :].transpose(1, 0, 2)
            q_h = q.transpose(1, 0, 2)
            att = q_h @ k_h.transpose(0, 2, 1) / math.sqrt(s.head_dim) + causal
            att = np.exp(att - att.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v_h).transpose(1, 0, 2).reshape(T, s.n_heads * s.head_dim)
            x = x + ctx @ L.wo.T
            h = rms_norm(x, L.ffn_norm, s.rms_eps)
            x = x + (silu(h @ L.w_gate.T) * (h @ L.w_up.T)) @ L.w_down.T
            if trace is not None:
                trace.append(x.copy())
        return rms_norm(x, self.output_norm, s.rms_eps)

    def logprobs(self, ids, positions=None):
        """Full-vocabulary log-softmax [len(positions), vocab] at the given
        positions of the sequence (default: the last one)."""
        hidden = self.hidden_states(ids)
        if positions is None:
            positions = [len(ids) - 1]
        return log_softmax(hidden[list(positions)] @ self.output.T)


# ---------------------------------------------------------------- loading


class _Consumed:
    """Wraps a checkpoint so that tensors nobody reads are reported: a tensor
    the reference ignores would be a tensor the engine may be using."""

    def __init__(self, source, names):
        self.source = source
        self.unread = set(names)

    def has(self, name):
        return name in self.source

    def get(self, name, shape=None):
        if name not in self.source:
            raise KeyError(f"missing tensor {name}")
        self.unread.discard(name)
        t = self.source.tensor(name)
        if shape is not None and tuple(t.shape) != tuple(shape):
            raise ValueError(f"{name}: shape {tuple(t.shape)}, expected {tuple(shape)}")
        return t

    def finish(self):
        if self.unread:
            raise ValueError(f"tensors not used by the architecture: {sorted(self.unread)}")


def _supported_arch(arch, where):
    if arch not in ARCHS:
        raise ValueError(f"{where}: architecture {arch} not supported")
    return arch


def load_model(path):
    """A GGUF file or a Hugging Face directory."""
    if os.path.isdir(path):
        return _load_hf(path)
    return _load_gguf(path)


def _layer_shapes(s):
    qd, kvd = s.n_heads * s.head_dim, s.n_kv_heads * s.head_dim
    return {
        "attn_norm": (s.d_model,), "wq": (qd, s.d_model), "wk": (kvd, s.d_model),
        "wv": (kvd, s.d_model), "bq": (qd,), "bk": (kvd,), "bv": (kvd,),
        "q_norm": (s.head_dim,), "k_norm": (s.head_dim,), "wo": (s.d_model, qd),
        "ffn_norm": (s.d_model,), "w_gate": (s.d_ff, s.d_model), "w_up": (s.d_ff, s.d_model),
        "w_down": (s.d_model, s.d_ff),
    }


def _build(spec, ck, names, has_bias, embd_name, norm_name, out_name):
    shapes = _layer_shapes(spec)
    wanted = ["attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down"]
    if has_bias:
        wanted += ["bq", "bk", "bv"]
    if spec.arch == "qwen3":
        wanted += ["q_norm", "k_norm"]
    layers = []
    for i in range(spec.n_layers):
        layers.append(Layer(**{w: ck.get(names(i, w), shapes[w]) for w in wanted}))
    tok_embd = ck.get(embd_name)
    if tok_embd.ndim != 2 or tok_embd.shape[1] != spec.d_model:
        raise ValueError(f"{embd_name}: shape {tok_embd.shape}")
    spec.vocab_size = tok_embd.shape[0]
    output_norm = ck.get(norm_name, (spec.d_model,))
    if spec.tied:
        output = tok_embd
        if ck.has(out_name):  # HF ties over a stored lm_head
            ck.get(out_name, tok_embd.shape)
    else:
        output = ck.get(out_name, tok_embd.shape)
    ck.finish()
    return RefModel(spec, tok_embd, output_norm, output, layers)


_GGUF_LAYER_NAMES = {
    "attn_norm": "attn_norm.weight", "wq": "attn_q.weight", "wk": "attn_k.weight",
    "wv": "attn_v.weight", "bq": "attn_q.bias", "bk": "attn_k.bias", "bv": "attn_v.bias",
    "q_norm": "attn_q_norm.weight", "k_norm": "attn_k_norm.weight",
    "wo": "attn_output.weight", "ffn_norm": "ffn_norm.weight", "w_gate": "ffn_gate.weight",
    "w_up": "ffn_up.weight", "w_down": "ffn_down.weight",
}


def _load_gguf(path):
    g = GGUFFile(path)
    md = g.metadata
    arch = _supported_arch(md["general.architecture"], path)

    def key(k, default=None):
        full = f"{arch}.{k}"
        if full not in md:
            if default is None:
                raise KeyError(f"{path}: missing metadata {full}")
            return default
        return md[full]

    d_model = int(key("embedding_length"))
    n_heads = int(key("attention.head_count"))
    head_dim = int(key("attention.key_length", d_model // n_heads))
    if int(key("rope.dimension_count", head_dim)) != head_dim:
        raise ValueError(f"{path}: partial rotary embeddings are not supported")
    inv_freq = base_inv_freq(float(key("rope.freq_base", 10000.0)), head_dim)
    scaling_type = key("rope.scaling.type", "none")
    if scaling_type == "linear":
        inv_freq = inv_freq / float(key("rope.scaling.factor"))
    elif scaling_type != "none":
        raise ValueError(f"{path}: rope scaling {scaling_type} not supported")
    if f"{arch}.rope.scale_linear" in md:  # the older spelling of linear scaling
        inv_freq = inv_freq / float(md[f"{arch}.rope.scale_linear"])
    ck = _Consumed(g, g.tensors)
    if ck.has("rope_freqs.weight"):  # llama3-style factors, used as divisors
        inv_freq = inv_freq / ck.get("rope_freqs.weight", (head_dim // 2,))
    spec = ModelSpec(
        arch=arch, fmt="gguf",
        n_layers=int(key("block_count")), d_model=d_model, n_heads=n_heads,
        n_kv_heads=int(key("attention.head_count_kv", n_heads)), head_dim=head_dim,
        d_ff=int(key("feed_forward_length")), vocab_size=0,
        context_length=int(key("context_length")),
        rms_eps=float(key("attention.layer_norm_rms_epsilon")),
        rope_pairing="norm" if arch == "llama" else "neox",
        inv_freq=inv_freq, tied="output.weight" not in g,
    )
    has_bias = "blk.0.attn_q.bias" in g
    if arch == "qwen2" and not has_bias:
        raise ValueError(f"{path}: qwen2 without q/k/v bias")
    return _build(spec, ck, lambda i, w: f"blk.{i}.{_GGUF_LAYER_NAMES[w]}", has_bias,
                  "token_embd.weight", "output_norm.weight", "output.weight")


_HF_LAYER_NAMES = {
    "attn_norm": "input_layernorm.weight", "wq": "self_attn.q_proj.weight",
    "wk": "self_attn.k_proj.weight", "wv": "self_attn.v_proj.weight",
    "bq": "self_attn.q_proj.bias", "bk": "self_attn.k_proj.bias", "bv": "self_attn.v_proj.bias",
    "q_norm": "self_attn.q_norm.weight", "k_norm": "self_attn.k_norm.weight",
    "wo": "self_attn.o_proj.weight", "ffn_norm": "post_attention_layernorm.weight",
    "w_gate": "mlp.gate_proj.weight", "w_up": "mlp.up_proj.weight",
    "w_down": "mlp.down_proj.weight",
}


def _hf_inv_freq(cfg, head_dim):
    inv_freq = base_inv_freq(float(cfg.get("rope_theta", 10000.0)), head_dim)
    scaling = cfg.get("rope_scaling")
    if not scaling:
        return inv_freq
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return inv_freq
    if kind == "linear":
        return inv_freq / float(scaling["factor"])
    if kind == "llama3":
        return llama3_inv_freq(inv_freq, float(scaling["factor"]),
                               float(scaling["low_freq_factor"]),
                               float(scaling["high_freq_factor"]),
                               float(scaling["original_max_position_embeddings"]))
    raise ValueError(f"rope_scaling {kind} not supported")


def _load_hf(directory):
    ck_file = HFCheckpoint(directory)
    cfg = ck_file.config
    arch = _supported_arch(cfg["model_type"], directory)
    n_heads = int(cfg["num_attention_heads"])
    d_model = int(cfg["hidden_size"])
    head_dim = int(cfg.get("head_dim") or d_model // n_heads)
    ck = _Consumed(ck_file, ck_file.tensor_names)
    spec = ModelSpec(
        arch=arch, fmt="hf",
        n_layers=int(cfg["num_hidden_layers"]), d_model=d_model, n_heads=n_heads,
        n_kv_heads=int(cfg.get("num_key_value_heads") or n_heads), head_dim=head_dim,
        d_ff=int(cfg["intermediate_size"]), vocab_size=0,
        context_length=int(cfg["max_position_embeddings"]),
        rms_eps=float(cfg["rms_norm_eps"]), rope_pairing="neox",
        inv_freq=_hf_inv_freq(cfg, head_dim),
        tied=bool(cfg.get("tie_word_embeddings", False)) or not ck.has("lm_head.weight"),
    )
    has_bias = arch == "qwen2" or bool(cfg.get("attention_bias", False))
    return _build(spec, ck, lambda i, w: f"model.layers.{i}.{_HF_LAYER_NAMES[w]}", has_bias,
                  "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight")
