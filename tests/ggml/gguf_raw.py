"""gguf_raw.py — GGUF v3 files as bytes, for the comparisons with ggml.

A reader that keeps the metadata section verbatim and gives each tensor's
type, dimensions and stored bytes (views into the file, read once), and a
writer that puts that metadata back in front of new tensors: enough to quantise or dequantise a file's tensors
with ggml and write the result as a file the engine loads. The metadata is
skipped value by value, never interpreted (general.alignment aside).
"""

import struct

ALIGNMENT_KEY = b"general.alignment"
DEFAULT_ALIGNMENT = 32
_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


class Tensor:
    def __init__(self, name, ne, ggml_type, data):
        self.name = name
        self.ne = ne  # fastest-varying first, as stored
        self.ggml_type = ggml_type
        self.data = data  # the stored bytes (a memoryview)

    @property
    def rows(self):
        n = 1
        for d in self.ne[1:]:
            n *= d
        return n


class RawGguf:
    def __init__(self, path, type_bytes):
        """type_bytes(ggml_type, n_elements) -> stored size (ggml's row size)."""
        with open(path, "rb") as f:
            buf = memoryview(f.read())
        assert buf[:4] == b"GGUF" and struct.unpack_from("<I", buf, 4)[0] == 3, path
        n_tensors, self.n_kv = struct.unpack_from("<QQ", buf, 8)
        pos = 24
        self.alignment = DEFAULT_ALIGNMENT
        for _ in range(self.n_kv):
            (klen,) = struct.unpack_from("<Q", buf, pos)
            key = bytes(buf[pos + 8: pos + 8 + klen])
            (vtype,) = struct.unpack_from("<I", buf, pos + 8 + klen)
            value_at = pos + 12 + klen
            if key == ALIGNMENT_KEY:
                (self.alignment,) = struct.unpack_from("<I", buf, value_at)
            pos = _skip_value(buf, value_at, vtype)
        self.metadata = bytes(buf[24:pos])
        infos = []
        for _ in range(n_tensors):
            (nlen,) = struct.unpack_from("<Q", buf, pos)
            name = bytes(buf[pos + 8: pos + 8 + nlen]).decode()
            pos += 8 + nlen
            (n_dims,) = struct.unpack_from("<I", buf, pos)
            ne = list(struct.unpack_from(f"<{n_dims}Q", buf, pos + 4))
            pos += 4 + 8 * n_dims
            ggml_type, offset = struct.unpack_from("<IQ", buf, pos)
            pos += 12
            infos.append((name, ne, ggml_type, offset))
        data_start = -(-pos // self.alignment) * self.alignment
        self.tensors = {}
        for name, ne, ggml_type, offset in infos:
            n = 1
            for d in ne:
                n *= d
            start = data_start + offset
            size = type_bytes(ggml_type, n)
            assert start + size <= len(buf), f"{name} runs past the end of {path}"
            self.tensors[name] = Tensor(name, ne, ggml_type, buf[start: start + size])

    def write(self, path, tensors):
        """This file's metadata followed by tensors: (name, ne, ggml_type,
        n_bytes, data) with data() giving the bytes, called in file order so
        that no more than one tensor is in memory."""
        infos, offset = bytearray(), 0
        for name, ne, ggml_type, n_bytes, _ in tensors:
            infos += struct.pack("<Q", len(name)) + name.encode()
            infos += struct.pack(f"<I{len(ne)}Q", len(ne), *ne)
            infos += struct.pack("<IQ", ggml_type, offset)
            offset += n_bytes + (-n_bytes % self.alignment)
        head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), self.n_kv) + self.metadata + infos
        with open(path, "wb") as f:
            f.write(head + b"\0" * (-len(head) % self.alignment))
            for _, _, _, n_bytes, data in tensors:
                chunk = data()
                assert len(chunk) == n_bytes
                f.write(chunk + b"\0" * (-n_bytes % self.alignment))


def _skip_value(buf, pos, vtype):
    if vtype in _SCALAR_BYTES:
        return pos + _SCALAR_BYTES[vtype]
    if vtype == _STRING:
        return pos + 8 + struct.unpack_from("<Q", buf, pos)[0]
    assert vtype == _ARRAY, f"unknown metadata type {vtype}"
    etype, count = struct.unpack_from("<IQ", buf, pos)
    pos += 12
    if etype in _SCALAR_BYTES:
        return pos + count * _SCALAR_BYTES[etype]
    for _ in range(count):
        pos = _skip_value(buf, pos, etype)
    return pos
