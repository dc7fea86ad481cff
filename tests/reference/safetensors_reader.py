"""safetensors_reader.py — the reference's own reader for Hugging Face checkpoints.

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON
({name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": ...}),
then the byte buffer the offsets point into. A Hugging Face model directory
holds config.json and either model.safetensors or shards listed by
model.safetensors.index.json ({"weight_map": {tensor: shard file}}).
Tensors come back as float64 numpy arrays of the stored shape.
"""

import json
import os
import struct

import numpy as np

from gguf_reader import bf16_to_float64

_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "F64": ("<f8", 8)}
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


class SafetensorsError(ValueError):
    pass


class SafetensorsFile:
    def __init__(self, path):
        self.path = str(path)
        with open(self.path, "rb") as f:
            self._buf = memoryview(f.read())
        if len(self._buf) < 8:
            raise SafetensorsError(f"{self.path}: shorter than its header length")
        (header_len,) = struct.unpack("<Q", self._buf[:8])
        if 8 + header_len > len(self._buf):
            raise SafetensorsError(f"{self.path}: header length {header_len} past the end")
        header = json.loads(bytes(self._buf[8 : 8 + header_len]).decode("utf-8"))
        self.metadata = header.pop("__metadata__", {})
        self._data_start = 8 + header_len
        self.entries = header
        data_len = len(self._buf) - self._data_start
        for name, e in header.items():
            begin, end = e["data_offsets"]
            if e["dtype"] not in _DTYPES:
                raise SafetensorsError(f"{name}: unsupported dtype {e['dtype']}")
            n = int(np.prod(e["shape"], dtype=np.int64))
            if not 0 <= begin <= end <= data_len or end - begin != n * _DTYPES[e["dtype"]][1]:
                raise SafetensorsError(f"{name}: offsets {begin}..{end} do not fit shape/dtype")

    def __contains__(self, name):
        return name in self.entries

    def tensor(self, name):
        e = self.entries[name]
        begin, end = e["data_offsets"]
        raw = self._buf[self._data_start + begin : self._data_start + end]
        np_dtype = _DTYPES[e["dtype"]][0]
        flat = np.frombuffer(raw, dtype=np_dtype)
        if e["dtype"] == "BF16":
            flat = bf16_to_float64(flat)
        else:
            flat = flat.astype(np.float64)
        return flat.reshape(e["shape"])

    def dtype_name(self, name):
        return self.entries[name]["dtype"]


class HFCheckpoint:
    """A Hugging Face model directory: .config (dict) and its tensors by name."""

    def __init__(self, directory):
        self.directory = str(directory)
        with open(os.path.join(self.directory, "config.json"), encoding="utf-8") as f:
            self.config = json.load(f)
        index_path = os.path.join(self.directory, INDEX_FILE)
        self._files = {}
        self._where = {}
        if os.path.exists(index_path):
            with open(index_path, encoding="utf-8") as f:
                weight_map = json.load(f)["weight_map"]
            for name, shard in weight_map.items():
                if os.path.basename(shard) != shard:
                    raise SafetensorsError(f"index names a shard outside the directory: {shard}")
                self._where[name] = shard
            for shard in sorted(set(weight_map.values())):
                st = self._open(shard)
                missing = [n for n, s in weight_map.items() if s == shard and n not in st]
                if missing:
                    raise SafetensorsError(f"{shard} lacks tensors the index puts there: {missing}")
        else:
            st = self._open(SINGLE_FILE)
            self._where = {name: SINGLE_FILE for name in st.entries}

    def _open(self, filename):
        if filename not in self._files:
            self._files[filename] = SafetensorsFile(os.path.join(self.directory, filename))
        return self._files[filename]

    @property
    def shard_count(self):
        return len(self._files)

    def __contains__(self, name):
        return name in self._where

    @property
    def tensor_names(self):
        return list(self._where)

    def tensor(self, name):
        return self._open(self._where[name]).tensor(name)

    def dtype_name(self, name):
        return self._open(self._where[name]).dtype_name(name)
