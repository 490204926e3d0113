"""A safetensors writer in the standard library only, shared by hf_reference.py
(torch tensors) and the system tests (plain Python floats)."""
import json
import struct


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype "F32"/"F16"/"BF16", shape, raw little-endian
    bytes). 8-byte LE header length, JSON header padded with spaces to 8 bytes,
    then the data back to back."""
    header, offset = {}, 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, data in tensors:
            f.write(data)
