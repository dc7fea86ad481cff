"""gguf_reader.py — the reference's own GGUF v3 reader (metadata and tensors).

Written from the GGUF specification (ggml docs/gguf.md), independently of the
engine's C reader, so that the engine-vs-reference gate compares two readings
of the same bytes. Tensors come back as float64 numpy arrays in the PyTorch
layout: GGUF lists dimensions fastest-first (ne[0] is the row length), so a
tensor with ne = [in, out] is returned with shape (out, in).

Supported tensor types: F32, F16, BF16, Q8_0 (blocks of 32 int8 with one
f16 scale each) and Q4_0 (blocks of 32 4-bit codes less 8, one f16 scale:
byte j holds value j in its low nibble and value j + 16 in its high one).
Anything else raises, as does any inconsistency in the file.
"""

import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value types (GGUF spec, gguf_metadata_value_type).
_SCALAR_FORMATS = {
    0: "<B",  # UINT8
    1: "<b",  # INT8
    2: "<H",  # UINT16
    3: "<h",  # INT16
    4: "<I",  # UINT32
    5: "<i",  # INT32
    6: "<f",  # FLOAT32
    7: "<?",  # BOOL
    10: "<Q",  # UINT64
    11: "<q",  # INT64
    12: "<d",  # FLOAT64
}
_TYPE_STRING = 8
_TYPE_ARRAY = 9

# ggml tensor types read here (ggml.h values).
GGML_F32 = 0
GGML_F16 = 1
GGML_Q4_0 = 2
GGML_Q8_0 = 8
GGML_BF16 = 30
GGML_TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_Q4_0: "Q4_0", GGML_Q8_0: "Q8_0",
                   GGML_BF16: "BF16"}
Q8_0_BLOCK = 32  # values per block, Q8_0 and Q4_0
_BLOCK_DTYPES = {
    GGML_Q8_0: np.dtype([("d", "<f2"), ("qs", "i1", (Q8_0_BLOCK,))]),
    GGML_Q4_0: np.dtype([("d", "<f2"), ("qs", "u1", (Q8_0_BLOCK // 2,))]),
}


class GGUFError(ValueError):
    pass


class _Cursor:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError(f"truncated at byte {self.pos} (need {n} more)")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))[0]

    def string(self):
        n = self.unpack("<Q")
        return bytes(self.take(n)).decode("utf-8")

    def value(self, vtype):
        if vtype in _SCALAR_FORMATS:
            return self.unpack(_SCALAR_FORMATS[vtype])
        if vtype == _TYPE_STRING:
            return self.string()
        if vtype == _TYPE_ARRAY:
            elem_type = self.unpack("<I")
            count = self.unpack("<Q")
            if count > len(self.buf):
                raise GGUFError(f"array of {count} elements is larger than the file")
            if elem_type in _SCALAR_FORMATS and elem_type != 7:
                fmt = _SCALAR_FORMATS[elem_type]
                raw = self.take(count * struct.calcsize(fmt))
                return np.frombuffer(raw, dtype=np.dtype(fmt)).tolist()
            if elem_type == _TYPE_STRING:
                return self.string_array(count)
            return [self.value(elem_type) for _ in range(count)]
        raise GGUFError(f"unknown metadata value type {vtype} at byte {self.pos}")

    def string_array(self, count):
        # Vocabularies hold ~10^5 strings: one tight loop instead of a call per string.
        buf, pos, end = self.buf, self.pos, len(self.buf)
        read_len = struct.Struct("<Q").unpack_from
        out = [None] * count
        for i in range(count):
            if pos + 8 > end:
                raise GGUFError(f"truncated string array at byte {pos}")
            (n,) = read_len(buf, pos)
            pos += 8
            if n > end - pos:
                raise GGUFError(f"string of {n} bytes at byte {pos} runs past the end")
            out[i] = str(buf[pos : pos + n], "utf-8")
            pos += n
        self.pos = pos
        return out


class TensorInfo:
    def __init__(self, name, dims, ggml_type, offset):
        self.name = name
        self.dims = dims  # fastest-varying first, as in the file
        self.ggml_type = ggml_type
        self.offset = offset  # relative to the start of the data section

    @property
    def shape(self):
        return tuple(reversed(self.dims))

    @property
    def n_elements(self):
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def n_bytes(self):
        n = self.n_elements
        if self.ggml_type == GGML_F32:
            return 4 * n
        if self.ggml_type in (GGML_F16, GGML_BF16):
            return 2 * n
        if self.ggml_type in _BLOCK_DTYPES:
            if self.dims[0] % Q8_0_BLOCK:
                raise GGUFError(f"{self.name}: {GGML_TYPE_NAMES[self.ggml_type]} row length "
                                f"{self.dims[0]} not a multiple of 32")
            return n // Q8_0_BLOCK * _BLOCK_DTYPES[self.ggml_type].itemsize
        raise GGUFError(f"{self.name}: unsupported ggml type {self.ggml_type}")


class GGUFFile:
    """A parsed GGUF file: .version, .metadata (dict), .tensors (name -> TensorInfo)."""

    def __init__(self, path):
        self.path = str(path)
        with open(self.path, "rb") as f:
            self._buf = memoryview(f.read())
        cur = _Cursor(self._buf)
        if bytes(cur.take(4)) != GGUF_MAGIC:
            raise GGUFError(f"{self.path}: not a GGUF file (bad magic)")
        self.version = cur.unpack("<I")
        if self.version != 3:
            raise GGUFError(f"{self.path}: GGUF version {self.version}, expected 3")
        n_tensors = cur.unpack("<Q")
        n_kv = cur.unpack("<Q")
        self.metadata = {}
        for _ in range(n_kv):
            key = cur.string()
            if key in self.metadata:
                raise GGUFError(f"duplicate metadata key {key}")
            self.metadata[key] = cur.value(cur.unpack("<I"))
        self.tensors = {}
        for _ in range(n_tensors):
            name = cur.string()
            n_dims = cur.unpack("<I")
            if not 1 <= n_dims <= 4:
                raise GGUFError(f"{name}: {n_dims} dimensions")
            dims = [cur.unpack("<Q") for _ in range(n_dims)]
            ggml_type = cur.unpack("<I")
            offset = cur.unpack("<Q")
            if name in self.tensors:
                raise GGUFError(f"duplicate tensor {name}")
            self.tensors[name] = TensorInfo(name, dims, ggml_type, offset)
        self.alignment = int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            raise GGUFError(f"general.alignment {self.alignment} is not a power of two")
        self.data_start = -(-cur.pos // self.alignment) * self.alignment
        for info in self.tensors.values():
            if info.offset % self.alignment:
                raise GGUFError(f"{info.name}: offset {info.offset} not aligned")
            end = self.data_start + info.offset + info.n_bytes
            if end > len(self._buf):
                raise GGUFError(f"{info.name}: data ends at {end}, past the file's end")

    def __contains__(self, name):
        return name in self.tensors

    def tensor(self, name):
        """The tensor as float64, shape reversed from GGUF's dims (PyTorch layout)."""
        info = self.tensors[name]
        start = self.data_start + info.offset
        raw = self._buf[start : start + info.n_bytes]
        if info.ggml_type == GGML_F32:
            flat = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif info.ggml_type == GGML_F16:
            flat = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif info.ggml_type == GGML_BF16:
            flat = bf16_to_float64(np.frombuffer(raw, dtype="<u2"))
        elif info.ggml_type == GGML_Q8_0:
            blocks = np.frombuffer(raw, dtype=_BLOCK_DTYPES[GGML_Q8_0])
            flat = (blocks["d"].astype(np.float64)[:, None] * blocks["qs"].astype(np.float64)).ravel()
        elif info.ggml_type == GGML_Q4_0:
            blocks = np.frombuffer(raw, dtype=_BLOCK_DTYPES[GGML_Q4_0])
            codes = np.concatenate([blocks["qs"] & 0xF, blocks["qs"] >> 4], axis=1)
            flat = (blocks["d"].astype(np.float64)[:, None] * (codes.astype(np.float64) - 8)).ravel()
        else:
            raise GGUFError(f"{name}: unsupported ggml type {info.ggml_type}")
        return flat.reshape(info.shape)

    def tensor_type_name(self, name):
        return GGML_TYPE_NAMES.get(self.tensors[name].ggml_type, str(self.tensors[name].ggml_type))


def bf16_to_float64(u16):
    """bfloat16 is the top half of an IEEE float32."""
    return (u16.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
