"""Writes the llama2.c checkpoint of an F32 Llama GGUF: the shipped
models/stories260K/stories260K.gguf back in the format it was converted from,
for the tests of the llama2.c reader (the repository ships the GGUF only).

    python3 tests/support/llama2c_from_gguf.py IN.gguf OUT.bin

llama.cpp's llama2.c converter copies the tensors unpermuted (both formats rotate
interleaved pairs), so this is the inverse: the seven-int32 header, the F32
tensors in llama2.c's order, and the two legacy RoPE tables llama2.c's export
wrote (its readers skip them)."""
import math
import struct
import sys

GGUF_MAGIC = b"GGUF"
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY, F32 = 8, 9, 0
LAYER_ORDER = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_down",
               "ffn_up"]


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        (value,) = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return value

    def string(self):
        n = self.take("Q")
        self.at += n
        return self.data[self.at - n:self.at].decode()

    def value(self, kind):
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            item_kind, n = self.take("I"), self.take("Q")
            return [self.value(item_kind) for _ in range(n)]
        if kind not in SCALARS:
            sys.exit(f"llama2c_from_gguf: metadata value type {kind} is not a GGUF type")
        return self.take(SCALARS[kind])


def read_gguf(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if data[:4] != GGUF_MAGIC:
        sys.exit(f"llama2c_from_gguf: {path} is not a GGUF file")
    r.at = 4
    _version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("Q") for _ in range(r.take("I"))]
        infos.append((name, dims, r.take("I"), r.take("Q")))
    align = meta.get("general.alignment", 32)
    base = (r.at + align - 1) // align * align
    tensors = {}
    for name, dims, kind, offset in infos:
        if kind != F32:
            sys.exit(f"llama2c_from_gguf: {path}: tensor {name} has GGML type {kind}, only F32 (0) is written")
        count = math.prod(dims)
        tensors[name] = data[base + offset:base + offset + 4 * count]
    return meta, tensors


def rope_tables(seq_len, head_dim):
    """llama2.c's freq_cis_real and freq_cis_imag: [seq_len, head_dim / 2], theta 10000."""
    freqs = [struct.unpack("<f", struct.pack("<f", 1.0 / 10000.0 ** (i / head_dim)))[0]
             for i in range(0, head_dim, 2)]
    angles = [struct.unpack("<f", struct.pack("<f", t * f))[0] for t in range(seq_len) for f in freqs]
    return (struct.pack(f"<{len(angles)}f", *map(math.cos, angles)),
            struct.pack(f"<{len(angles)}f", *map(math.sin, angles)))


def main(src, dst):
    meta, tensors = read_gguf(src)
    arch = meta.get("general.architecture")
    if arch != "llama":
        sys.exit(f"llama2c_from_gguf: {src}: general.architecture is {arch!r}, llama2.c holds 'llama' only")
    dim, layers = meta["llama.embedding_length"], meta["llama.block_count"]
    heads = meta["llama.attention.head_count"]
    kv_heads = meta.get("llama.attention.head_count_kv", heads)
    seq_len = meta["llama.context_length"]
    vocab = len(meta["tokenizer.ggml.tokens"])
    # llama.cpp's converter writes output.weight even for a shared classifier: shared when equal.
    tied = tensors.get("output.weight", tensors["token_embd.weight"]) == tensors["token_embd.weight"]
    header = struct.pack("<7i", dim, meta["llama.feed_forward_length"], layers, heads, kv_heads,
                         vocab if tied else -vocab, seq_len)
    parts = [header, tensors["token_embd.weight"]]
    for stem in LAYER_ORDER:
        parts += [tensors[f"blk.{i}.{stem}.weight"] for i in range(layers)]
    parts.append(tensors["output_norm.weight"])
    parts += rope_tables(seq_len, dim // heads)
    if not tied:
        parts.append(tensors["output.weight"])
    with open(dst, "wb") as f:
        f.write(b"".join(parts))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: llama2c_from_gguf.py IN.gguf OUT.bin")
    main(sys.argv[1], sys.argv[2])
