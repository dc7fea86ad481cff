"""test_ggml_files.py — GGUF files of ggml's block types, against ggml itself.

- The model maker's files: for each block type, every quantised tensor holds
  exactly the bytes ggml's reference quantiser makes from the same f32
  weights (the maker's f32 file of the same seed), and the engine scores the
  file exactly as it scores an f32 copy whose weights ggml dequantised.
- llama.cpp's quantiser: llama_model_quantize turns the maker's f16 file
  into mixed files (Q4_K_M: q4_K, q6_K and f32 tensors; Q5_K_M; Q4_0; Q5_1),
  and the engine scores each as it scores the f32 copy ggml dequantised
  (|Δ logprob| ≤ 1e-4).
- Every file is also scored in int8 and int8x2 (its blocks as they are, no
  requantisation) and in bf16 against f32 on ggml's dequantisation, within
  LOW_PRECISION_GATES; its int8 weights take the bytes the format says for
  its tensor types (printed per parameter).

The model is the Qwen3 architecture at widths that are whole 256-element
super-blocks, with the Llama 2 vocabulary (32,000 rows) to stay small.
LMSCORE_GGML_PRESET=qwen3-0.6b runs the llama.cpp part on that preset
instead (its own tokenizer, ~6 GB of files in the temporary directory).

Run: LMSCORE_BUILD_DIR=build LMSCORE_GGML_LIB_DIR=<ggml-ref libs>
     /usr/bin/python3 -m pytest tests/ggml/test_ggml_files.py
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ggml_ref import GGML_TYPES, Ggml  # noqa: E402
from gguf_raw import RawGguf  # noqa: E402

BUILD = os.environ.get("LMSCORE_BUILD_DIR", "build")
LIB_DIR = os.environ.get("LMSCORE_GGML_LIB_DIR")
PRESET = os.environ.get("LMSCORE_GGML_PRESET")
MAKER = os.path.join(BUILD, "tools", "lmscore-make-model")
LOCAL = os.path.join(BUILD, "tools", "lmscore-local")

SMALL = ["--preset", "tiny-qwen3", "--vocab-from", "llama2", "--tokenizer-pre", "",
         "--vocab-size", "32000", "--hidden", "256", "--heads", "4", "--kv-heads", "2",
         "--head-dim", "64", "--ffn", "512", "--layers", "2"]
GEOMETRY = ["--preset", PRESET] if PRESET else SMALL
REQUEST = {"query": "Is this fruit red? Answer yes or no.",
           "items": [" An apple", " A banana", " A ripe red cherry", " The sky"],
           "label_texts": ["yes", "no"] if not PRESET else [" yes", " no"]}
MAKER_TYPES = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_K", "q5_K", "q6_K"]
# The file types llama.cpp makes and the tensor types each must contain.
LLAMA_FILES = {"Q4_K_M": {"q4_K", "q6_K", "f32"}, "Q5_K_M": {"q5_K", "q6_K", "f32"},
               "Q4_0": {"q4_0", "f32"}, "Q5_1": {"q5_1", "f32"}}
MAX_DELTA = 1e-4
# (max, mean) |Δ logprob| against f32 on ggml's dequantisation. int8 and
# int8x2 compute on the same values (the packed weights are ggml's
# exactly): what moves the logprobs is the activations' quantisation to one
# int8 code (as llama.cpp's own) or to two (15 bits), and f16 keys and
# values. bf16 rounds the weights to bf16.
LOW_PRECISION_GATES = {"int8": (0.3, 0.1), "int8x2": (0.01, 0.002), "bf16": (0.15, 0.06)}
SAMPLED_ROWS = 512  # of a tensor too large to quantise whole in Python


@pytest.fixture(scope="module")
def ggml():
    if not LIB_DIR or not os.path.isfile(os.path.join(LIB_DIR, "libggml-base.so")):
        pytest.fail(f"ggml's libraries are not at LMSCORE_GGML_LIB_DIR={LIB_DIR} (ctest ggml.npm)")
    return Ggml(LIB_DIR)


def make(tmp, name, dtype, geometry=SMALL):
    path = os.path.join(tmp, f"{name}.gguf")
    subprocess.run([MAKER, *geometry, "--tokenizers", os.path.join(BUILD, "tokenizers"),
                    "--dtype", dtype, "--name", name, "--gguf", path],
                   check=True, capture_output=True, timeout=1200)
    return path


def run(path, precision):
    """lmscore-local's result for REQUEST on path."""
    proc = subprocess.run([LOCAL, "--model", path, "--request", "-", "--precision", precision],
                          input=json.dumps(REQUEST),
                          capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, f"{path}: {proc.stdout}{proc.stderr}"
    return json.loads(proc.stdout)


def score(path, precision="f32"):
    return np.array(run(path, precision)["logprobs"], dtype=np.float64)


# The int8 format's arrays per type (engine/model/weights.h): blocks of 32
# per D (and M), sub-scales per block, offsets M, sub-offsets m.
INT8_LAYOUTS = {"q4_1": (1, 0, True, False), "q5_1": (1, 0, True, False),
                "q4_K": (8, 1, True, True), "q5_K": (8, 1, True, True),
                "q6_K": (8, 2, False, False)}


def int8_bytes(type_name, n, k):
    """Bytes of an n × k matrix stored as type_name in the int8 format: per
    column (n padded to panels of 32) 32 one-byte codes per block, an f16 D
    (and M) per group, the int8 sub-scales and sub-offsets."""
    group, halves, offsets, sub_offsets = INT8_LAYOUTS.get(type_name, (1, 0, False, False))
    blocks = -(-k // 32)
    groups = -(-blocks // group)
    per_column = 32 * blocks + 2 * groups * (2 if offsets else 1) + blocks * halves + \
        (blocks if sub_offsets else 0)
    return -(-n // 32) * 32 * per_column


def check_int8_bytes(ggml, path, src):
    """The engine's int8 weight bytes for path: the format's size for each
    matrix's stored type (norms are not weights)."""
    result = run(path, "int8")
    matrices = [t for t in src.tensors.values() if len(t.ne) == 2]
    want = sum(int8_bytes(ggml.name(t.ggml_type), t.rows, t.ne[0]) for t in matrices)
    assert result["weight_bytes"] == want
    assert result["parameters"] == sum(t.rows * t.ne[0] for t in matrices)
    print(f"{os.path.basename(path)}: int8 weights {result['weight_bytes']} bytes, "
          f"{result['weight_bytes'] / result['parameters']:.4f} bytes/parameter")


def dequantised_copy(ggml, path, out):
    """path with every tensor replaced by ggml's f32 decoding of it."""
    src = RawGguf(path, ggml.row_bytes)

    def decoded(t):
        return lambda: ggml.to_f32(t.ggml_type, t.data, t.rows * t.ne[0]).tobytes()

    src.write(out, [(t.name, t.ne, GGML_TYPES["f32"], 4 * t.rows * t.ne[0], decoded(t))
                    for t in src.tensors.values()])
    return src


def scores_match_dequantised(ggml, path, tmp):
    """The engine's logprobs on path, in f32 and in int8, against f32 on
    ggml's f32 decoding of it; returns the file's tensor type names."""
    copy = os.path.join(tmp, "dequantised-by-ggml.gguf")
    src = dequantised_copy(ggml, path, copy)
    reference = score(copy)
    delta = np.abs(score(path) - reference).max()
    low = {p: np.abs(score(path, p) - reference) for p in LOW_PRECISION_GATES}
    print(f"{os.path.basename(path)}: |Δ logprob| against f32 on ggml's dequantisation: "
          f"f32 max {delta:.3g}; " + "; ".join(f"{p} max {d.max():.3g}, mean {d.mean():.3g}"
                                                for p, d in low.items()))
    assert delta <= MAX_DELTA
    for p, d in low.items():
        assert d.max() <= LOW_PRECISION_GATES[p][0] and d.mean() <= LOW_PRECISION_GATES[p][1], p
    check_int8_bytes(ggml, path, src)
    return {ggml.name(t.ggml_type) for t in src.tensors.values()}


@pytest.fixture(scope="module")
def f32_model(tmp_path_factory):
    return make(str(tmp_path_factory.mktemp("f32")), "small-f32", "f32")


def sampled_rows(n_rows):
    if n_rows <= SAMPLED_ROWS:
        return np.arange(n_rows)
    return np.unique(np.concatenate([np.arange(64), np.linspace(0, n_rows - 1, SAMPLED_ROWS - 64)
                                     .astype(np.int64)]))


@pytest.mark.parametrize("dtype", MAKER_TYPES)
def test_maker_writes_ggml_bytes_and_the_engine_reads_ggml_values(ggml, f32_model, tmp_path,
                                                                   dtype):
    path = make(str(tmp_path), f"small-{dtype}", dtype)
    stored = RawGguf(path, ggml.row_bytes)
    f32 = RawGguf(f32_model, ggml.row_bytes)
    assert stored.tensors.keys() == f32.tensors.keys()
    quantised = 0
    for name, t in stored.tensors.items():
        ref = f32.tensors[name]
        assert t.ne == ref.ne, name
        if len(t.ne) == 1:
            assert t.ggml_type == GGML_TYPES["f32"] and bytes(t.data) == bytes(ref.data), name
            continue
        assert t.ggml_type == GGML_TYPES[dtype], f"{name} is {ggml.name(t.ggml_type)}"
        values = np.frombuffer(ref.data, dtype="<f4").reshape(t.rows, t.ne[0])
        row_bytes = ggml.row_bytes(t.ggml_type, t.ne[0])
        for r in sampled_rows(t.rows):
            ours = bytes(t.data[r * row_bytes:(r + 1) * row_bytes])
            assert ours == ggml.quantize(t.ggml_type, values[r]), f"{name} row {r}"
        quantised += 1
    assert quantised >= 2 * 7 + 1  # every matrix of both layers and the embedding
    assert scores_match_dequantised(ggml, path, str(tmp_path)) == {dtype, "f32"}


@pytest.fixture(scope="module")
def f16_model(tmp_path_factory):
    name = f"{PRESET}-f16" if PRESET else "small-f16"
    return make(str(tmp_path_factory.mktemp("f16")), name, "f16", GEOMETRY)


@pytest.mark.parametrize("ftype", ["Q4_K_M"] if PRESET else list(LLAMA_FILES))
def test_llama_quantized_files_load_and_score_as_ggml_dequantises_them(ggml, f16_model, tmp_path,
                                                                        ftype):
    path = os.path.join(str(tmp_path), f"{ftype}.gguf")
    ggml.llama_quantize(f16_model, path, ftype, threads=os.cpu_count() or 1)
    types = scores_match_dequantised(ggml, path, str(tmp_path))
    print(f"{ftype}: tensor types {sorted(types)}")
    assert LLAMA_FILES[ftype] <= types
