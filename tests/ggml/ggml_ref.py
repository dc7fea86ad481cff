"""ggml_ref.py — ggml's own prebuilt libraries through ctypes: the reference
for the block formats (libggml-base.so) and llama.cpp's quantiser
(libllama.so), from the pinned npm package @node-llama-cpp/linux-x64 that
the ctest fixture ggml.npm installs (tests/ggml/npm).

Only C entry points whose signatures have not changed in ggml's history are
called: ggml_type_name/_size, ggml_blck_size, dequantize_row_<type>,
quantize_row_<type>_ref, ggml_fp16_to_fp32_row, llama_model_quantize. The
quantiser's parameter struct is filled by llama's own
llama_model_quantize_default_params; only its two leading fields (nthread,
ftype — stable since the struct exists) are changed.
"""

import ctypes
import glob
import os
import struct

import numpy as np

# ggml.h's type ids of the types the engine loads.
GGML_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8,
              "q4_K": 12, "q5_K": 13, "q6_K": 14, "bf16": 30}
# llama.h's llama_ftype: the file types llama_model_quantize makes.
LLAMA_FTYPES = {"Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q4_K_S": 14,
                "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18}

_LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_QUIET = _LOG_CALLBACK(lambda level, text, user: None)


class _Params(ctypes.Structure):
    """Room for llama_model_quantize_params, whatever its size this version
    (returned through a caller-provided buffer, being larger than 16 bytes)."""
    _fields_ = [("raw", ctypes.c_ubyte * 1024)]


class Ggml:
    def __init__(self, libdir):
        self.libdir = libdir
        self.base = ctypes.CDLL(os.path.join(libdir, "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
        self.base.ggml_log_set(_QUIET, None)
        self.base.ggml_type_name.restype = ctypes.c_char_p
        self.base.ggml_type_size.restype = ctypes.c_size_t
        self.base.ggml_blck_size.restype = ctypes.c_int64
        self._llama = None

    def name(self, ggml_type):
        return self.base.ggml_type_name(ggml_type).decode()

    def row_bytes(self, ggml_type, n):
        """Bytes of n elements (whole blocks) of the type."""
        return n // self.base.ggml_blck_size(ggml_type) * self.base.ggml_type_size(ggml_type)

    def to_f32(self, ggml_type, data, n):
        """n values stored as ggml_type in data, decoded by ggml."""
        if ggml_type == GGML_TYPES["f32"]:
            return np.frombuffer(data, dtype="<f4", count=n).copy()
        out = np.empty(n, dtype=np.float32)
        src = ctypes.create_string_buffer(bytes(data), len(data))
        name = "ggml_fp16_to_fp32_row" if ggml_type == GGML_TYPES["f16"] else \
            "ggml_bf16_to_fp32_row" if ggml_type == GGML_TYPES["bf16"] else \
            "dequantize_row_" + self.name(ggml_type)
        getattr(self.base, name)(src, out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(n))
        return out

    def quantize(self, ggml_type, x):
        """The float32 values x (whole blocks) as ggml's reference quantiser
        (quantize_row_<type>_ref) stores them."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = ctypes.create_string_buffer(self.row_bytes(ggml_type, x.size))
        getattr(self.base, f"quantize_row_{self.name(ggml_type)}_ref")(
            x.ctypes.data_as(ctypes.c_void_p), out, ctypes.c_int64(x.size))
        return out.raw

    def llama_quantize(self, src, dst, ftype, threads=1):
        """llama.cpp's quantiser (llama-quantize without an importance
        matrix): src, a GGUF llama.cpp can load, to dst as ftype."""
        if self._llama is None:
            ggml = glob.glob(os.path.join(self.libdir, "libggml.*so"))
            llama = glob.glob(os.path.join(self.libdir, "libllama.*so"))
            assert len(ggml) == 1 and len(llama) == 1, f"libggml/libllama in {self.libdir}"
            ctypes.CDLL(ggml[0], mode=ctypes.RTLD_GLOBAL)
            self._llama = ctypes.CDLL(llama[0])
            self._llama.llama_log_set(_QUIET, None)
            self._llama.llama_backend_init()
            self._llama.llama_model_quantize_default_params.restype = _Params
            self._llama.llama_model_quantize.restype = ctypes.c_uint32
        params = self._llama.llama_model_quantize_default_params()
        struct.pack_into("<ii", params.raw, 0, threads, LLAMA_FTYPES[ftype])
        rc = self._llama.llama_model_quantize(os.fsencode(src), os.fsencode(dst),
                                              ctypes.byref(params))
        assert rc == 0, f"llama_model_quantize {src} -> {ftype} failed ({rc})"
