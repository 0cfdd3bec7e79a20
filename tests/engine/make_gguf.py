#!/usr/bin/env python3
"""Writes a GGUF model of the llama architecture with random weights, for the tests' real engine.

The shapes, the metadata and the tokenizer are real (a SentencePiece-style vocabulary with byte
fallback, as Llama 2 and Mistral ship); the weights are noise, so the model speaks nonsense at the
speed its shape costs. llama.cpp loads it as it loads any GGUF file.

  make_gguf.py OUT.gguf --embd 640 --layers 10 --ff 1728 --heads 10 --kv-heads 5
"""
import argparse
import os
import struct
import sys

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# Value types of GGUF's metadata (ggml's gguf.h).
T_UINT32, T_INT32, T_FLOAT32, T_STRING, T_ARRAY = 4, 5, 6, 8, 9
# Tensor types.
GGML_F32, GGML_F16 = 0, 1

# Token types of the vocabulary (llama.cpp's llama_token_type).
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6

WORDS = (
    "the of and to a in is it you that he was for on are with as I his they be at one have this from or had by "
    "word but what some we can out other were all there when up use your how said an each she which do their "
    "time if will way about many then them write would like so these her long make thing see him two has look "
    "more day could go come did number sound no most people my over know water than call first who may down "
    "side been now find any new work part take get place made live where after back little only round man year "
    "came show every good me give our under name very through just form sentence great think say help low line "
    "differ turn cause much mean before move right boy old too same tell does set three want air well also play "
    "small end put home read hand port large spell add even land here must big high such follow act why ask men "
    "change went light kind off need house picture try us again animal point mother world near build self earth "
    "father head stand own page should country found answer school grow study still learn plant cover food sun "
    "four between state keep eye never last let thought city tree cross farm hard start might story saw far sea "
    "draw left late run while press close night real life few north cat sat mat dog ran red door"
).split()


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    out = gguf_string(key) + struct.pack("<I", vtype)
    if vtype == T_UINT32:
        out += struct.pack("<I", value)
    elif vtype == T_INT32:
        out += struct.pack("<i", value)
    elif vtype == T_FLOAT32:
        out += struct.pack("<f", value)
    elif vtype == T_STRING:
        out += gguf_string(value)
    else:
        raise ValueError(vtype)
    return out


def kv_array(key, etype, values):
    out = gguf_string(key) + struct.pack("<I", T_ARRAY) + struct.pack("<IQ", etype, len(values))
    if etype == T_STRING:
        out += b"".join(gguf_string(v) for v in values)
    elif etype == T_FLOAT32:
        out += struct.pack("<%df" % len(values), *values)
    elif etype == T_INT32:
        out += struct.pack("<%di" % len(values), *values)
    else:
        raise ValueError(etype)
    return out


def vocabulary():
    """<unk>, <s>, </s>, the 256 byte tokens, then letters, digits and words with their leading space."""
    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [UNKNOWN, CONTROL, CONTROL]
    for b in range(256):
        tokens.append("<0x%02X>" % b)
        scores.append(0.0)
        types.append(BYTE)
    pieces = ["\u2581"] + list("abcdefghijklmnopqrstuvwxyz0123456789.,!?") + ["\u2581" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    seen = set(tokens) | set(pieces)
    for w in WORDS:
        for p in ("\u2581" + w, w):
            if p not in seen:
                pieces.append(p)
                seen.add(p)
    for i, p in enumerate(pieces):
        tokens.append(p)
        # SentencePiece's scores: log-probabilities; longer pieces win the merges.
        scores.append(-float(i) / 1000.0 + len(p))
        types.append(NORMAL)
    return tokens, scores, types


def random_f16(count):
    """Half floats of magnitude 2^-8 to 2^-6, random sign and mantissa: noise that stays finite."""
    data = bytearray(os.urandom(count * 2))
    # High byte: sign, five exponent bits, two mantissa bits. Exponent 7 or 8 (biased 15).
    table = bytes(((b & 0x83) | 0x1C) for b in range(256))
    data[1::2] = bytes(data[1::2]).translate(table)
    return bytes(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--name", default="random-llama")
    ap.add_argument("--embd", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--ff", type=int, default=768)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=0, help="grouped-query attention (default: as many as --heads)")
    ap.add_argument("--context", type=int, default=4096)
    a = ap.parse_args()
    kv_heads = a.kv_heads or a.heads
    if a.embd % a.heads or a.heads % kv_heads:
        sys.exit("make_gguf.py: --embd must divide by --heads, and --heads by --kv-heads")
    head_dim = a.embd // a.heads
    embd_kv = head_dim * kv_heads

    tokens, scores, types = vocabulary()
    n_vocab = len(tokens)
    meta = [
        kv("general.architecture", T_STRING, "llama"),
        kv("general.name", T_STRING, a.name),
        kv("general.alignment", T_UINT32, ALIGNMENT),
        kv("general.file_type", T_UINT32, 1),  # mostly F16
        kv("llama.context_length", T_UINT32, a.context),
        kv("llama.embedding_length", T_UINT32, a.embd),
        kv("llama.block_count", T_UINT32, a.layers),
        kv("llama.feed_forward_length", T_UINT32, a.ff),
        kv("llama.attention.head_count", T_UINT32, a.heads),
        kv("llama.attention.head_count_kv", T_UINT32, kv_heads),
        kv("llama.attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-5),
        kv("llama.rope.dimension_count", T_UINT32, head_dim),
        kv("llama.rope.freq_base", T_FLOAT32, 10000.0),
        kv("llama.vocab_size", T_UINT32, n_vocab),
        kv("tokenizer.ggml.model", T_STRING, "llama"),
        kv_array("tokenizer.ggml.tokens", T_STRING, tokens),
        kv_array("tokenizer.ggml.scores", T_FLOAT32, scores),
        kv_array("tokenizer.ggml.token_type", T_INT32, types),
        kv("tokenizer.ggml.unknown_token_id", T_UINT32, 0),
        kv("tokenizer.ggml.bos_token_id", T_UINT32, 1),
        kv("tokenizer.ggml.eos_token_id", T_UINT32, 2),
    ]

    # (name, dims innermost first, type); norms in F32 (ones), matrices in F16 (noise).
    tensors = [("token_embd.weight", [a.embd, n_vocab], GGML_F16)]
    for i in range(a.layers):
        p = "blk.%d." % i
        tensors += [
            (p + "attn_norm.weight", [a.embd], GGML_F32),
            (p + "attn_q.weight", [a.embd, a.embd], GGML_F16),
            (p + "attn_k.weight", [a.embd, embd_kv], GGML_F16),
            (p + "attn_v.weight", [a.embd, embd_kv], GGML_F16),
            (p + "attn_output.weight", [a.embd, a.embd], GGML_F16),
            (p + "ffn_norm.weight", [a.embd], GGML_F32),
            (p + "ffn_gate.weight", [a.embd, a.ff], GGML_F16),
            (p + "ffn_up.weight", [a.embd, a.ff], GGML_F16),
            (p + "ffn_down.weight", [a.ff, a.embd], GGML_F16),
        ]
    tensors += [("output_norm.weight", [a.embd], GGML_F32), ("output.weight", [a.embd, n_vocab], GGML_F16)]

    def nbytes(dims, t):
        n = 1
        for d in dims:
            n *= d
        return n * (4 if t == GGML_F32 else 2)

    def padded(n):
        return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT

    infos, offset = [], 0
    for name, dims, t in tensors:
        infos.append(gguf_string(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims) +
                     struct.pack("<IQ", t, offset))
        offset += padded(nbytes(dims, t))

    header = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(meta)) + b"".join(meta) + b"".join(infos)
    tmp = a.out + ".part"
    params = 0
    with open(tmp, "wb") as f:
        f.write(header)
        f.write(b"\0" * (padded(len(header)) - len(header)))
        for name, dims, t in tensors:
            n = nbytes(dims, t)
            params += n // (4 if t == GGML_F32 else 2)
            f.write(struct.pack("<f", 1.0) * (n // 4) if t == GGML_F32 else random_f16(n // 2))
            f.write(b"\0" * (padded(n) - n))
    os.replace(tmp, a.out)
    print("%s: %d tensors, %.1fM parameters, %d tokens in the vocabulary" % (a.out, len(tensors), params / 1e6, n_vocab))


if __name__ == "__main__":
    main()
