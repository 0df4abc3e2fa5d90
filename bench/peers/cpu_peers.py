#!/usr/bin/env python3
"""Times a timm EfficientNet on the CPU in PyTorch or ONNX Runtime, the peers kiln is compared with.

fp32, NCHW input at the model's resolution (config.json's pretrained_cfg, else 224), the same
weights as the kiln bundle (loaded from the same Hugging Face checkpoint folder). One peer and
one thread count per process, so that one library's idle threads do not disturb another's timing:
  torch         PyTorch eager under torch.inference_mode, torch.set_num_threads(THREADS)
  onnxruntime   torch.onnx.export of the same model (opset 17, dynamic batch), ONNX Runtime's CPU
                execution provider, all graph optimisations, intra_op_num_threads=THREADS,
                inter_op_num_threads=1
Timing: WARMUP calls, then SAMPLES calls, each timed alone; median, p10, p90 and min in ms. One
JSON object per batch size on stdout.

  python3 cpu_peers.py --checkpoint DIR --peer onnxruntime --threads 2 --batch 1,8 [--onnx model.onnx]
"""
import argparse
import json
import os
import sys
import time

import torch


def load_model(checkpoint):
    import safetensors.torch
    import timm

    config = json.load(open(f"{checkpoint}/config.json"))
    model = timm.create_model(config["architecture"], pretrained=False, num_classes=config.get("num_classes", 1000))
    model.load_state_dict(safetensors.torch.load_file(f"{checkpoint}/model.safetensors"))
    size = config.get("pretrained_cfg", {}).get("input_size", [3, 224, 224])[1]
    return model.float().eval(), size, config["architecture"]


def time_calls(fn, warmup, samples):
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(samples):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    pick = lambda q: ms[min(len(ms) - 1, int(q * (len(ms) - 1) + 0.5))]
    return {"median_ms": pick(0.5), "p10_ms": pick(0.1), "p90_ms": pick(0.9), "min_ms": ms[0]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--peer", choices=["torch", "onnxruntime"], required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--batch", default="1,8")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--samples", type=int, default=30)
    p.add_argument("--onnx", default="", help="where the exported model is written (and read if it exists)")
    a = p.parse_args()

    torch.manual_seed(0)
    model, size, arch = load_model(a.checkpoint)
    batches = [int(b) for b in a.batch.split(",")]
    if a.peer == "torch":
        torch.set_num_threads(a.threads)
        version = torch.__version__
    else:
        import onnxruntime as ort

        path = a.onnx or "/tmp/cpu_peers_model.onnx"
        if not os.path.exists(path):
            torch.onnx.export(model, torch.randn(1, 3, size, size), path, opset_version=17, input_names=["pixels"],
                              output_names=["logits"], dynamic_axes={"pixels": {0: "batch"}, "logits": {0: "batch"}},
                              dynamo=False)
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        version = ort.__version__

    for batch in batches:
        x = torch.randn(batch, 3, size, size)
        if a.peer == "torch":
            with torch.inference_mode():
                stats = time_calls(lambda: model(x), a.warmup, a.samples)
        else:
            feed = {"pixels": x.numpy()}
            stats = time_calls(lambda: session.run(None, feed), a.warmup, a.samples)
        print(json.dumps({"peer": a.peer, "version": version, "model": arch, "threads": a.threads, "batch": batch,
                          **{k: round(v, 4) for k, v in stats.items()}}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
