#!/usr/bin/env python3
"""Seed corpus for gguf_file_fuzz: small, valid GGUF files that reach every stage of the
target (metadata, tokenizer, config, weight binding), made from the real vocabularies.

  make_gguf_corpus.py OUT_DIR VOCAB.gguf... [--model MODEL.gguf]

For each vocabulary: a copy cut to its first 600 tokens (merges kept where both parts and
the result survive), which loads much faster than the full file. Then tiny models (dim 32,
one layer) of each architecture (llama, qwen2 with biases, qwen3 with Q/K norms) in f32,
f16 and q8_0, with the first vocabulary's cut tokenizer (or MODEL's, when given), and
the model itself when given. Python 3 stdlib only.
"""
import os
import random
import shutil
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?",
          U64: "Q", I64: "q", F64: "d"}
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.d, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.d[self.p:self.p + n]
        self.p += n
        return s

    def value(self, t):
        if t == STR:
            return self.string()
        if t == ARR:
            et, n = self.take("I"), self.take("Q")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(SCALAR[t])


def read_gguf(path):
    """The metadata: a list of (key, type, value)."""
    data = open(path, "rb").read()
    r = Reader(data)
    assert data[:4] == b"GGUF"
    r.p = 4
    _version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
    kv = []
    for _ in range(n_kv):
        key = r.string().decode()
        t = r.take("I")
        kv.append((key, t, r.value(t)))
    return kv


def pack_value(t, v):
    if t == STR:
        return struct.pack("<Q", len(v)) + v
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(pack_value(et, x) for x in items)
    return struct.pack("<" + SCALAR[t], v)


def write_gguf(path, kv, tensors, align=32):
    out = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kv))]
    for key, t, v in kv:
        out += [pack_value(STR, key.encode()), struct.pack("<I", t), pack_value(t, v)]
    off, blobs = 0, []
    for name, ne, t, blob in tensors:
        out += [pack_value(STR, name.encode()), struct.pack("<I", len(ne)),
                b"".join(struct.pack("<Q", n) for n in ne), struct.pack("<IQ", t, off)]
        pad = (len(blob) + align - 1) // align * align - len(blob)
        blobs.append(blob + b"\0" * pad)
        off += len(blob) + pad
    head = b"".join(out)
    head += b"\0" * ((len(head) + align - 1) // align * align - len(head))
    with open(path, "wb") as f:
        f.write(head + b"".join(blobs))


def cut_vocab(kv, n):
    """The tokenizer.* keys with the token arrays cut to n entries."""
    out = []
    tokens = next((v[1] for k, _, v in kv if k == "tokenizer.ggml.tokens"), [])
    keep = set(tokens[:n])
    for key, t, v in kv:
        if not key.startswith("tokenizer."):
            continue
        if t == ARR and key in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                                "tokenizer.ggml.token_type"):
            v = (v[0], v[1][:n])
        elif t == ARR and key == "tokenizer.ggml.merges":
            merges = []
            for m in v[1]:
                a, _, b = m.partition(b" ")
                if a in keep and b in keep and a + b in keep:
                    merges.append(m)
            v = (v[0], merges)
        elif t in (U32, I32, U64, I64) and key.endswith("_token_id") and v >= n:
            v = n - 1
        out.append((key, t, v))
    return out


def f16_bytes(values):
    return b"".join(struct.pack("<e", x) for x in values)


def q8_0_bytes(values):
    out = []
    for i in range(0, len(values), 32):
        block = values[i:i + 32]
        amax = max(abs(x) for x in block) or 1.0
        d = amax / 127
        out.append(struct.pack("<e", d) + bytes((round(x / d) & 0xFF) for x in block))
    return b"".join(out)


def tensor(name, ne, kind, rng):
    n = 1
    for x in ne:
        n *= x
    vals = [rng.uniform(-0.5, 0.5) for _ in range(n)]
    if len(ne) == 1 or kind == "f32":
        return (name, ne, GGML_F32, struct.pack("<%df" % n, *vals))
    if kind == "f16":
        return (name, ne, GGML_F16, f16_bytes(vals))
    return (name, ne, GGML_Q8_0, q8_0_bytes(vals))


def tiny_model(arch, kind, vocab_kv, n_vocab, rng):
    dim, heads, kv_heads, ffn, hd = 32, 4, 2, 64, 8
    a = arch + "."
    kv = [("general.architecture", STR, arch.encode()), ("general.name", STR, b"tiny"),
          (a + "embedding_length", U32, dim), (a + "block_count", U32, 1),
          (a + "attention.head_count", U32, heads), (a + "attention.head_count_kv", U32, kv_heads),
          (a + "feed_forward_length", U32, ffn), (a + "context_length", U32, 128),
          (a + "attention.layer_norm_rms_epsilon", F32, 1e-5), (a + "rope.freq_base", F32, 10000.0)]
    if arch == "qwen3":
        kv.append((a + "attention.key_length", U32, hd))
    kv += vocab_kv
    t = [tensor("token_embd.weight", [dim, n_vocab], kind, rng),
         tensor("output_norm.weight", [dim], kind, rng)]
    if arch != "llama":
        t.append(tensor("output.weight", [dim, n_vocab], kind, rng))
    p = "blk.0."
    t += [tensor(p + "attn_norm.weight", [dim], kind, rng),
          tensor(p + "attn_q.weight", [dim, heads * hd], kind, rng),
          tensor(p + "attn_k.weight", [dim, kv_heads * hd], kind, rng),
          tensor(p + "attn_v.weight", [dim, kv_heads * hd], kind, rng),
          tensor(p + "attn_output.weight", [heads * hd, dim], kind, rng),
          tensor(p + "ffn_norm.weight", [dim], kind, rng),
          tensor(p + "ffn_gate.weight", [dim, ffn], kind, rng),
          tensor(p + "ffn_up.weight", [dim, ffn], kind, rng),
          tensor(p + "ffn_down.weight", [ffn, dim], kind, rng)]
    if arch == "qwen2":
        t += [tensor(p + "attn_q.bias", [heads * hd], kind, rng),
              tensor(p + "attn_k.bias", [kv_heads * hd], kind, rng),
              tensor(p + "attn_v.bias", [kv_heads * hd], kind, rng)]
    if arch == "qwen3":
        t += [tensor(p + "attn_q_norm.weight", [hd], kind, rng),
              tensor(p + "attn_k_norm.weight", [hd], kind, rng)]
    return kv, t


def main():
    args = sys.argv[1:]
    model = None
    if "--model" in args:
        i = args.index("--model")
        model = args[i + 1]
        del args[i:i + 2]
    out_dir, vocabs = args[0], args[1:]
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(27)
    cut = []
    for path in vocabs:
        kv = read_gguf(path)
        ckv = cut_vocab(kv, 600)
        name = os.path.basename(path).replace(".gguf", "")
        write_gguf(os.path.join(out_dir, name + ".cut600.gguf"),
                   [("general.architecture", STR, b"llama")] + ckv, [])
        cut.append(ckv)
    if model:
        vocab_kv = [x for x in read_gguf(model) if x[0].startswith("tokenizer.")]
        shutil.copy(model, os.path.join(out_dir, "model.gguf"))
    elif cut:
        vocab_kv = cut[0]
    else:
        vocab_kv = []
    n_vocab = next((len(v[1]) for k, _, v in vocab_kv if k == "tokenizer.ggml.tokens"), 64)
    for arch in ("llama", "qwen2", "qwen3"):
        for kind in ("f32", "f16", "q8_0"):
            kv, t = tiny_model(arch, kind, vocab_kv, n_vocab, rng)
            write_gguf(os.path.join(out_dir, "tiny-%s-%s.gguf" % (arch, kind)), kv, t)


if __name__ == "__main__":
    main()
