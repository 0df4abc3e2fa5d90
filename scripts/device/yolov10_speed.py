#!/usr/bin/env python3
"""kiln against Ultralytics' PyTorch YOLOv10 on one GPU, in the same run.

usage: yolov10_speed.py KILN ULTRALYTICS_PARENT OUT [sizes...]   (sizes: n s m, the default)

For each size: the deterministic-weight checkpoint of yolov10_reference.py in the Hub layout,
`kiln build --precision fp16 --batch 1,32` (kernels timed on this GPU), `kiln bench` at 640x640;
Ultralytics' model with the same weights, fused (conv+BN, RepVGGDW) as its predictor runs it, fp16,
in export mode (only the one-to-one head and v10postprocess: the fastest form PyTorch offers),
timed eagerly and as a CUDA graph. Model time only: the input is on the GPU already; pre- and
post-processing are timed apart by `kiln detect` (not here). Writes OUT/yolov10_speed.json.
"""
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from yolov10_reference import Hub, randomize, save_hub  # noqa: E402


def cuda_time(fn, iters, warmup, runs=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / iters)
    return sorted(out)[len(out) // 2]


def graph_of(model, x):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x)
    return g


def main():
    kiln, parent, out = sys.argv[1:4]
    sizes = sys.argv[4:] or ["n", "s", "m"]
    sys.path.insert(0, parent)
    os.environ.setdefault("YOLO_CONFIG_DIR", "/tmp/yolo-config")
    from ultralytics import YOLOv10

    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "models": {}}
    for size in sizes:
        arch = f"yolov10{size}"
        print(f"{arch}: making the checkpoint", flush=True)
        m = YOLOv10(f"{arch}.yaml")
        randomize(Hub(m.model))
        ckpt = f"/tmp/ckpt/{arch}"
        save_hub(Hub(m.model), ckpt, f"{arch}.yaml", m.model.names)
        bundle = f"/tmp/{arch}.bundle"
        t0 = time.time()
        subprocess.run([kiln, "build", ckpt, "-o", bundle, "--precision", "fp16", "--batch", "1,32"], check=True,
                       stdout=subprocess.DEVNULL, timeout=150)
        entry = {"kiln_build_s": round(time.time() - t0, 1)}
        print(f"{arch}: kiln build (kernels timed on this GPU) {entry['kiln_build_s']} s", flush=True)
        bench = subprocess.run([kiln, "bench", bundle, "--batch", "1,32", "--sizes", "height=640,width=640,anchors=8400",
                                "--iters", "100", "--warmup", "200", "--json"], check=True, capture_output=True,
                               text=True, timeout=120).stdout
        entry["kiln_bench"] = [json.loads(line) for line in bench.splitlines() if line.startswith("{")]
        for b in entry["kiln_bench"]:
            print(f"{arch} batch {b['batch']}: kiln fp16 {b['median_ms']:.3f} ms", flush=True)
        net = m.model.fuse().half().cuda().eval()
        net.model[-1].export = True  # one-to-one head + v10postprocess only
        net.model[-1].format = "engine"
        with torch.no_grad():
            for batch in (1, 32):
                x = torch.rand(batch, 3, 640, 640, device="cuda", dtype=torch.half)
                eager = cuda_time(lambda: net(x), 50, 50)
                g = graph_of(net, x)
                graph = cuda_time(g.replay, 200, 200)
                entry[f"torch_fp16_eager_b{batch}_ms"] = round(eager, 4)
                entry[f"torch_fp16_cudagraph_b{batch}_ms"] = round(graph, 4)
                print(f"{arch} batch {batch}: torch eager {eager:.3f} ms, CUDA graph {graph:.3f} ms", flush=True)
        results["models"][arch] = entry
        del net, m
        torch.cuda.empty_cache()
    with open(os.path.join(out, "yolov10_speed.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
