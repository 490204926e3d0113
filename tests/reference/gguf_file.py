"""A GGUF (version 3) writer in the standard library only, for hf_reference.py:
the GGUF files llama.cpp's convert_hf_to_gguf.py would write for the tiny
checkpoints (its key names, tensor names and q/k permutation), F32 tensors."""
import struct

ALIGNMENT = 32
U32, I32, F32, BOOL, STRING, ARRAY, U64 = 4, 5, 6, 7, 8, 9, 10
GGML_F32 = 0


def _string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def _value(kind, value):
    if kind == U32:
        return struct.pack("<I", value)
    if kind == I32:
        return struct.pack("<i", value)
    if kind == F32:
        return struct.pack("<f", value)
    if kind == BOOL:
        return struct.pack("<B", 1 if value else 0)
    if kind == STRING:
        return _string(value)
    if kind == U64:
        return struct.pack("<Q", value)
    if kind == ARRAY:  # value: (element kind, list of values)
        item_kind, items = value
        return struct.pack("<IQ", item_kind, len(items)) + b"".join(_value(item_kind, v) for v in items)
    raise ValueError(kind)


def placeholder_vocab(n_vocab):
    """A SentencePiece-type vocabulary of n_vocab made-up pieces ("<unk>", "<s>", "</s>",
    "<|endoftext|>" (llama.cpp looks it up in a Phi-3 file), then "t4", "t5", ...), all of them
    normal tokens so that every runtime prints each piece as it is, for runtimes that refuse a
    GGUF without a vocabulary (llama.cpp): the models are driven by token ids, the pieces only
    name the ids."""
    tokens = PLACEHOLDER_SPECIAL + ["t%d" % i for i in range(len(PLACEHOLDER_SPECIAL), n_vocab)]
    return [("tokenizer.ggml.model", STRING, "llama"),
            ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
            ("tokenizer.ggml.scores", ARRAY, (F32, [0.0] * n_vocab)),
            ("tokenizer.ggml.token_type", ARRAY, (I32, [1] * n_vocab)),
            ("tokenizer.ggml.unknown_token_id", U32, 0),
            ("tokenizer.ggml.bos_token_id", U32, 1),
            ("tokenizer.ggml.eos_token_id", U32, 2),
            ("tokenizer.ggml.add_bos_token", BOOL, False)]


PLACEHOLDER_SPECIAL = ["<unk>", "<s>", "</s>", "<|endoftext|>"]


def write_gguf(path, kvs, tensors):
    """kvs: list of (key, kind, value); tensors: list of (name, shape [rows, cols]
    or [n], raw little-endian f32 bytes). GGUF stores dimensions fastest first."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, kind, value in kvs:
        head += _string(key) + struct.pack("<I", kind) + _value(kind, value)
    offset, infos, blobs = 0, b"", []
    for name, shape, data in tensors:
        dims = list(reversed(list(shape)))
        infos += _string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", GGML_F32, offset)
        pad = (ALIGNMENT - len(data) % ALIGNMENT) % ALIGNMENT
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    out = head + infos
    out += b"\0" * ((ALIGNMENT - len(out) % ALIGNMENT) % ALIGNMENT)
    with open(path, "wb") as f:
        f.write(out)
        for b in blobs:
            f.write(b)
