#!/usr/bin/env python3
"""Times a timm EfficientNet in PyTorch on the GPU, the peers kiln is compared with.

fp16, channels_last, input already on the GPU at the model's resolution (config.json's
pretrained_cfg, else 224), the same weights as the kiln bundle (loaded from the same Hugging Face
checkpoint folder). Modes:
  eager         plain calls
  graph         the forward captured in a torch.cuda.CUDAGraph, replayed
  compile       torch.compile(mode="reduce-overhead") (inductor + CUDA graphs)
  compile-max   torch.compile(mode="max-autotune-no-cudagraphs")
Timing: warm-up calls, then SAMPLES samples of CALLS calls between two CUDA events; median,
p10, p90 and min of the per-call times. One JSON object per line on stdout.

  python3 torch_peers.py --checkpoint DIR --modes eager,graph --batch 1,32,128
"""
import argparse
import json
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
    return model.cuda().half().eval().to(memory_format=torch.channels_last), size


def time_calls(fn, warmup, samples, calls):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(samples):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop) / calls)
    ms.sort()
    pick = lambda q: ms[min(len(ms) - 1, int(q * (len(ms) - 1) + 0.5))]
    return {"median_ms": pick(0.5), "p10_ms": pick(0.1), "p90_ms": pick(0.9), "min_ms": ms[0]}


def runner(model, mode, x):
    if mode == "eager":
        return lambda: model(x)
    if mode == "graph":
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(x)
        return graph.replay
    if mode == "compile":
        compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)
        return lambda: compiled(x)
    if mode == "compile-max":
        compiled = torch.compile(model, mode="max-autotune-no-cudagraphs", dynamic=False)
        return lambda: compiled(x)
    raise SystemExit(f"unknown mode {mode}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--modes", default="eager,graph,compile")
    p.add_argument("--batch", default="1,32,128")
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--samples", type=int, default=50)
    p.add_argument("--calls", type=int, default=20)
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    model, size = load_model(args.checkpoint)
    for mode in args.modes.split(","):
        for batch in [int(b) for b in args.batch.split(",")]:
            x = torch.randn(batch, 3, size, size, device="cuda").half().to(memory_format=torch.channels_last)
            t0 = time.time()
            with torch.inference_mode():
                fn = runner(model, mode, x)
                fn()
                setup_s = time.time() - t0
                result = time_calls(fn, args.warmup, args.samples, args.calls)
            result.update({"peer": f"torch {torch.__version__}", "mode": mode, "batch": batch, "input": size,
                           "setup_s": round(setup_s, 1), "gpu": torch.cuda.get_device_name()})
            print(json.dumps(result), flush=True)
            torch._dynamo.reset()


if __name__ == "__main__":
    sys.exit(main())
