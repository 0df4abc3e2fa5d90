#!/usr/bin/env python3
"""Writes a Marian checkpoint with opus-mt-en-de's dimensions and random weights, for speed runs on
machines without transformers (scripts/device/seq2seq_speed.py makes the same shapes with it).

The tensor names, config and tokenizer files come from the small trained fixture
(checkpoints/marian-tiny-en-de of the test data): every tensor scaled up to d_model 512, FFN 2048,
6 + 6 layers and a 58101-token vocabulary, weights normal(0, 0.02) from a fixed seed, biases 0,
layer norms 1; the vocabulary filled up with ids the tokenizer never makes, <pad> last.

  python3 random_marian.py FIXTURE_DIR OUT_DIR        (needs numpy)
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

V, D, F, LAYERS = 58101, 512, 2048, 6


def read_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def main():
    fixture, out = sys.argv[1:3]
    os.makedirs(out, exist_ok=True)
    header = read_header(os.path.join(fixture, "model.safetensors"))
    cfg = json.load(open(os.path.join(fixture, "config.json")))
    small = {cfg["d_model"]: D, cfg["encoder_ffn_dim"]: F, cfg["vocab_size"]: V}
    rng = np.random.default_rng(0)
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__" or (".layers." in name and ".layers.0." not in name):
            continue
        names = [name.replace(".layers.0.", f".layers.{i}.") for i in range(LAYERS)] if ".layers.0." in name else [name]
        shape = [small.get(s, s) for s in t["shape"]]
        for n in names:
            if n.endswith("layer_norm.weight"):
                tensors[n] = np.ones(shape, np.float32)
            elif n.endswith(".bias") or n == "final_logits_bias":
                tensors[n] = np.zeros(shape, np.float32)
            else:
                tensors[n] = (rng.standard_normal(shape) * 0.02).astype(np.float32)
    meta, offset = {}, 0
    for n in sorted(tensors):
        meta[n] = {"dtype": "F32", "shape": list(tensors[n].shape), "data_offsets": [offset, offset + tensors[n].nbytes]}
        offset += tensors[n].nbytes
    meta["__metadata__"] = {"format": "pt"}
    text = json.dumps(meta).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for n in sorted(tensors):
            f.write(tensors[n].tobytes())

    pad = V - 1
    cfg.update({"vocab_size": V, "decoder_vocab_size": V, "d_model": D, "encoder_layers": LAYERS,
                "decoder_layers": LAYERS, "encoder_attention_heads": 8, "decoder_attention_heads": 8,
                "encoder_ffn_dim": F, "decoder_ffn_dim": F, "pad_token_id": pad, "decoder_start_token_id": pad})
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    gen = json.load(open(os.path.join(fixture, "generation_config.json")))
    gen.update({"bad_words_ids": [[pad]], "decoder_start_token_id": pad, "pad_token_id": pad})
    json.dump(gen, open(os.path.join(out, "generation_config.json"), "w"), indent=2)
    for f in ("source.spm", "target.spm", "tokenizer_config.json"):
        shutil.copy(os.path.join(fixture, f), out)
    vocab = json.load(open(os.path.join(fixture, "vocab.json"), encoding="utf-8"))
    taken = set(vocab.values())
    for i in range(V):
        if i not in taken and i != pad:
            vocab[f"<unused_{i}>"] = i
    vocab.pop("<pad>", None)
    vocab["<pad>"] = pad
    json.dump(vocab, open(os.path.join(out, "vocab.json"), "w"), ensure_ascii=False)


if __name__ == "__main__":
    main()
