#!/usr/bin/env python3
"""kiln against Ultralytics' PyTorch YOLOv10 on one GPU, in the same run.

usage: yolov10_speed.py KILN ULTRALYTICS_PARENT DATA OUT [sizes...]   (sizes: n s m, the default)

Network time, per size: the deterministic-weight checkpoint of yolov10_reference.py in the Hub
layout, `kiln build --precision fp16 --batch 1,32` (kernels timed on this GPU), `kiln bench` at
640x640; Ultralytics' model with the same weights, fused (conv+BN, RepVGGDW) as its predictor runs
it, fp16, channels_last, in export mode (only the one-to-one head and v10postprocess: the fastest
form PyTorch offers), cudnn.benchmark on, timed with bench/peers/torch_peers.py's runner: eager, a CUDA graph, and
torch.compile (reduce-overhead). The input is on the GPU already.
Pre- and post-processing, yolov10n only: `kiln eval --device cuda` on DATA/coco-val2017-128 (its
per-stage times) against Ultralytics' predictor on the same images (its speed dict), fp16.
Writes OUT/yolov10_speed.json. Environment: MODES (eager,graph,compile; empty: no peers), PREPOST=0
skips the pre- and post-processing, WITHOUT_CUDNN=1 also times kiln with KILN_CUDNN=0 (its own
kernels only), PROFILE=1 writes `kiln bench --profile` at batch 1 and 32 per size to OUT.
"""
import json
import os
import subprocess
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "bench", "peers"))
from torch_peers import runner, time_calls  # noqa: E402
from yolov10_reference import Hub, randomize, save_hub  # noqa: E402


def kiln_network(kiln, arch, ckpt, out, label="kiln", env=None):
    bundle = f"/tmp/{arch}-{label}.bundle"
    env = dict(os.environ, **(env or {}))
    t0 = time.time()
    subprocess.run([kiln, "build", ckpt, "-o", bundle, "--precision", "fp16", "--batch", "1,32"], check=True,
                   stdout=subprocess.DEVNULL, timeout=200, env=env)
    entry = {f"{label}_build_s": round(time.time() - t0, 1)}
    print(f"{arch}: {label} build (kernels timed on this GPU) {entry[f'{label}_build_s']} s", flush=True)
    sizes = ["--sizes", "height=640,width=640,anchors=8400"]
    bench = subprocess.run([kiln, "bench", bundle, "--batch", "1,32", *sizes, "--iters", "100", "--warmup", "200",
                            "--json"], check=True, capture_output=True, text=True, timeout=120, env=env).stdout
    entry[label] = [json.loads(line) for line in bench.splitlines() if line.startswith("{")]
    for b in entry[label]:
        print(f"{arch} batch {b['batch']}: {label} fp16 {b['median_ms']:.3f} ms", flush=True)
    if os.environ.get("PROFILE") == "1":  # kernels one by one, with the variant each node runs
        with open(os.path.join(out, f"{arch}-{label}-profile.jsonl"), "w") as f:
            for batch in ("1", "32"):
                subprocess.run([kiln, "bench", bundle, "--batch", batch, *sizes, "--iters", "20", "--profile", "--json"],
                               check=True, stdout=f, stderr=subprocess.DEVNULL, timeout=120, env=env)
    return bundle, entry


def torch_network(model, arch, modes):
    torch.backends.cudnn.benchmark = True  # fixed shapes here; off for the predictor's varying ones
    net = model.fuse().half().cuda().eval().to(memory_format=torch.channels_last)
    net.model[-1].export = True  # one-to-one head + v10postprocess only
    net.model[-1].format = "engine"
    rows = []
    for mode in modes:
        for batch in (1, 32):
            x = torch.rand(batch, 3, 640, 640, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
            t0 = time.time()
            try:
                with torch.inference_mode():
                    # An eager call at this batch first: v10Detect recomputes its anchors (an
                    # attribute) when the input shape changes, which a compiled graph must not see.
                    net(x)
                    fn = runner(net, mode, x)
                    fn()
                    setup_s = time.time() - t0
                    r = time_calls(fn, 50, 30, 10)
            except Exception as e:  # a peer mode that fails is reported, not fatal
                print(f"{arch} batch {batch}: torch {mode} failed: {type(e).__name__}: {e}", flush=True)
                continue
            finally:
                torch._dynamo.reset()
            r.update({"mode": mode, "batch": batch, "setup_s": round(setup_s, 1)})
            rows.append(r)
            print(f"{arch} batch {batch}: torch {mode} {r['median_ms']:.3f} ms", flush=True)
    torch.backends.cudnn.benchmark = False
    return rows


def pre_post(kiln, bundle, model, data):
    """Per-image stage times of both pipelines on the same val images, batch 1."""
    folder = os.path.join(data, "coco-val2017-128")
    out = subprocess.run([kiln, "eval", bundle, "--data", folder, "--device", "cuda", "--json"], check=True,
                         capture_output=True, text=True, timeout=200).stdout
    k = json.loads(out.strip().splitlines()[-1])
    images = sorted(os.path.join(folder, "images", f) for f in os.listdir(os.path.join(folder, "images")))
    model.predict(images[0], imgsz=640, half=True, device=0, verbose=False)  # warm-up
    sums = {"preprocess": 0.0, "inference": 0.0, "postprocess": 0.0}
    t0 = time.time()
    for p in images:
        r = model.predict(p, imgsz=640, half=True, device=0, conf=0.001, max_det=300, verbose=False)[0]
        for key in sums:
            sums[key] += r.speed[key]
    wall = time.time() - t0
    u = {key: v / len(images) for key, v in sums.items()}
    u["images_per_s"] = len(images) / wall
    print(f"kiln per image: decode {k['decode_ms']:.2f} ms, letterbox {k['preprocess_ms']:.2f} ms, network "
          f"{k['inference_ms']:.2f} ms, boxes back {k['postprocess_ms']:.3f} ms; {k['images_per_s']:.1f} images/s",
          flush=True)
    print(f"Ultralytics per image (its speed dict; cv2.imread is outside it): preprocess {u['preprocess']:.2f} ms, inference {u['inference']:.2f} ms, postprocess "
          f"{u['postprocess']:.2f} ms; {u['images_per_s']:.1f} images/s end to end", flush=True)
    return {"kiln": k, "ultralytics": u}


def main():
    kiln, parent, data, out = sys.argv[1:5]
    sizes = sys.argv[5:] or ["n", "s", "m"]
    modes = [m for m in os.environ.get("MODES", "eager,graph,compile").split(",") if m]
    sys.path.insert(0, parent)
    os.environ.setdefault("YOLO_CONFIG_DIR", "/tmp/yolo-config")
    from ultralytics import YOLOv10

    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "models": {}}
    for size in sizes:
        arch = f"yolov10{size}"
        m = YOLOv10(f"{arch}.yaml")
        randomize(Hub(m.model))
        ckpt = f"/tmp/ckpt/{arch}"
        save_hub(Hub(m.model), ckpt, f"{arch}.yaml", m.model.names)
        bundle, entry = kiln_network(kiln, arch, ckpt, out)
        if os.environ.get("WITHOUT_CUDNN") == "1":  # kiln's own kernels only, for comparison
            entry.update(kiln_network(kiln, arch, ckpt, out, "kiln_without_cudnn", {"KILN_CUDNN": "0"})[1])
        if size == sizes[0] and os.environ.get("PREPOST", "1") == "1":
            entry["pre_post"] = pre_post(kiln, bundle, m, data)
        entry["torch"] = torch_network(m.model, arch, modes)
        results["models"][arch] = entry
        with open(os.path.join(out, "yolov10_speed.json"), "w") as f:  # after each size: a timeout keeps the rest
            json.dump(results, f, indent=1)
        del m
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
