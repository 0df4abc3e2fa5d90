#!/usr/bin/env python3
"""Parity of kiln with timm for every architecture the family builds, on random weights.

For each architecture: a timm model with random weights and randomised batch-norm statistics
(so that folding is exercised), saved in Hugging Face layout; timm's fp32 logits (TF32 off) on
random input at the model's default resolution; then `kiln build` (fp32 and fp16) and `kiln run`:
the fp32 bundle on the CPU and on the GPU (fp32 math), the fp16 bundle on the GPU (fp16 math).
Prints one JSON object per architecture and run.

  python3 timm_parity.py --kiln build/bin/kiln --work /tmp/parity
"""
import argparse
import json
import os
import subprocess
import sys

import safetensors.torch
import timm
import torch

ARCHS = [f"{p}efficientnet_b{i}" for p in ("", "tf_") for i in range(5)]


def kiln(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr.strip(), file=sys.stderr, flush=True)
    return r.returncode == 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kiln", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--archs", default=",".join(ARCHS))
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for arch in args.archs.split(","):
        torch.manual_seed(0)
        model = timm.create_model(arch, pretrained=False).eval()
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.2, 0.2)
        folder = os.path.join(args.work, arch)
        os.makedirs(folder, exist_ok=True)
        safetensors.torch.save_file({k: v.contiguous() for k, v in model.state_dict().items()},
                                    f"{folder}/model.safetensors")
        cfg = model.pretrained_cfg
        json.dump({"architecture": arch, "num_classes": 1000,
                   "pretrained_cfg": {k: cfg[k] for k in ("input_size", "interpolation", "crop_pct", "mean", "std")}},
                  open(f"{folder}/config.json", "w"))
        size = cfg["input_size"][1]
        x = torch.randn(2, 3, size, size)
        with torch.no_grad():
            ref = model.cuda()(x.cuda()).float().cpu()
        safetensors.torch.save_file({"pixels": x}, f"{folder}/input.safetensors")
        for precision in ("fp32", "fp16"):
            kiln(args.kiln, "build", folder, "-o", f"{folder}/model-{precision}.bundle", "--precision", precision)
        for precision, device in (("fp32", "cpu"), ("fp32", "cuda"), ("fp16", "cuda")):
            out = f"{folder}/out-{precision}-{device}.safetensors"
            if not kiln(args.kiln, "run", f"{folder}/model-{precision}.bundle", "--input", f"{folder}/input.safetensors",
                        "-o", out, "--device", device):
                print(json.dumps({"arch": arch, "device": device, "precision": precision, "error": "kiln run failed"}),
                      flush=True)
                continue
            got = safetensors.torch.load_file(out)["logits"]
            diff = (got - ref).abs().max().item()
            rel = ((got - ref).norm() / ref.norm()).item()
            same_top1 = bool((got.argmax(1) == ref.argmax(1)).all())
            print(json.dumps({"arch": arch, "device": device, "precision": precision, "input": size,
                              "max_abs_logit_diff": diff,
                              "rel_l2": rel, "top1_same": same_top1}), flush=True)


if __name__ == "__main__":
    main()
