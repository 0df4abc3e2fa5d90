#!/usr/bin/env python3
"""Reference outputs of YOLOv10 (THU-MIG/yolov10's Ultralytics source) for kiln's yolov10 tests.

usage: yolov10_reference.py ULTRALYTICS_PARENT DATA OUT [--sizes n,s] [--runs 320:4,640:2] [--merge-into FILE]
                            [--train-epochs N] [--train-minutes M]

ULTRALYTICS_PARENT is a folder holding the repository's `ultralytics/` package; DATA holds
`coco-val2017-128/` and `coco-train2017-128/`. Writes to OUT:
  random_reference.json   the --sizes (yolov10n and yolov10s) with deterministic weights; with
                          --merge-into, FILE with these sizes added (the test data was made as
                          `--sizes n,s`, then `--sizes m,b,l,x --runs 320:2 --merge-into` it) (the formula below,
                          which tests/yolov10_weights.h repeats in C++): for some val images at
                          imgsz 320 and 640, the letterboxed image's SHA-256 and the predictor's
                          300 detections (conf 0, i.e. before any threshold), in original pixels.
  yolov10n-coco128/       a yolov10n trained briefly on coco-train2017-128, saved as the Hub
                          stores jameslahm/yolov10n (config.json + model.safetensors, fp32).
  trained_reference.json  that model's detections at conf 0.25 on all 128 val images, its raw 300
                          on the first 4, and Ultralytics' own `val` metrics on the val images.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch

MASK = (1 << 64) - 1


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def uniform(name, count):
    """count values in [0, 1) from the tensor's name: splitmix64's finaliser of fnv1a64(name) + i * golden."""
    with np.errstate(over="ignore"):
        z = np.uint64(fnv1a64(name)) + np.arange(count, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def deterministic_value(name, shape):
    """The value of one tensor of the random checkpoints, by the role its name gives it."""
    count = int(np.prod(shape)) if len(shape) else 1
    u = uniform(name, count)
    if name.endswith(".bn.weight"):
        v = 0.5 + u
    elif name.endswith(".bn.running_var"):
        v = 0.5 + u
    elif name.endswith(".bn.bias") or name.endswith(".bn.running_mean"):
        v = 0.2 * (2 * u - 1)
    elif name.endswith(".weight") and len(shape) == 4:
        fan_in = shape[1] * shape[2] * shape[3]
        v = (2 * u - 1) * np.sqrt(3.0 / fan_in)
    elif name.endswith(".bias"):
        v = 2 * u - 1
    else:
        raise ValueError(f"no deterministic value for {name} {shape}")
    return torch.from_numpy(v.astype(np.float32).reshape(shape))


def randomize(wrapper):
    """Every float tensor of the wrapper's state dict (Hub names) by the formula; DFL's fixed arange stays."""
    sd = wrapper.state_dict()
    manifest = []
    for name, t in sd.items():
        if name.endswith("num_batches_tracked"):
            continue
        manifest.append([name, list(t.shape)])
        if name.endswith(".dfl.conv.weight"):
            continue
        t.copy_(deterministic_value(name, list(t.shape)))
    return manifest


def letterbox_sha(path, imgsz):
    import cv2
    from ultralytics.data.augment import LetterBox

    img = cv2.imread(path)
    lb = LetterBox(imgsz, auto=True, stride=32)(image=img)
    rgb = np.ascontiguousarray(lb[..., ::-1])
    return list(lb.shape[:2]), hashlib.sha256(rgb.tobytes()).hexdigest(), list(img.shape[:2])


def detections(result):
    b = result.boxes
    return {
        "boxes": [[round(float(v), 4) for v in row] for row in b.xyxy.cpu().numpy()],
        "scores": [round(float(v), 7) for v in b.conf.cpu().numpy()],
        "classes": [int(v) for v in b.cls.cpu().numpy()],
    }


def predict(model, paths, imgsz, conf, device):
    out = []
    for p in paths:
        r = model.predict(p, imgsz=imgsz, conf=conf, max_det=300, device=device, half=False, verbose=False)[0]
        shape, sha, orig = letterbox_sha(p, imgsz)
        out.append({"image": os.path.basename(p), "size": orig, "letterboxed": shape, "sha256": sha, **detections(r)})
    return out


def save_hub(wrapper, folder, yaml_name, names):
    from safetensors.torch import save_file

    os.makedirs(folder, exist_ok=True)
    sd = {k: v.detach().cpu().contiguous() for k, v in wrapper.state_dict().items()}
    save_file(sd, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model": yaml_name, "names": {str(k): v for k, v in names.items()}, "task": "detect"}, f, indent=2)


class Hub(torch.nn.Module):
    """The state-dict layout of THU-MIG's hub mixin: the YOLOv10 wrapper's `model` attribute."""

    def __init__(self, detection_model):
        super().__init__()
        self.model = detection_model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ultralytics_parent")
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--train-epochs", type=int, default=0)
    ap.add_argument("--train-minutes", type=float, default=4.0)
    ap.add_argument("--sizes", default="n,s", help="sizes with deterministic weights; empty: none")
    ap.add_argument("--runs", default="320:4,640:2", help="imgsz:images (the first val images) per run")
    ap.add_argument("--merge-into", help="an earlier random_reference.json to add these sizes to")
    args = ap.parse_args()
    if args.train_epochs > 0:
        # Ultralytics' select_device("cpu") sets CUDA_VISIBLE_DEVICES=-1; initialise CUDA first so that
        # the GPU stays visible to the later training and val.
        torch.cuda.init()
        assert torch.cuda.is_available()
    # Ultralytics 8.1 predates numpy 2 (np.trapz removed) and torch 2.6 (torch.load's weights_only=True default,
    # which cannot unpickle its own checkpoints).
    if not hasattr(np, "trapz"):
        np.trapz = np.trapezoid
    _torch_load = torch.load

    def torch_load(*a, **k):
        k.setdefault("weights_only", False)
        return _torch_load(*a, **k)

    torch.load = torch_load
    sys.path.insert(0, args.ultralytics_parent)
    os.environ.setdefault("YOLO_CONFIG_DIR", "/tmp/yolo-config")
    from ultralytics import YOLOv10

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    val_dir = os.path.join(args.data, "coco-val2017-128")
    images = sorted(os.path.join(val_dir, "images", f) for f in os.listdir(os.path.join(val_dir, "images")))

    # Random weights: fp32 on the CPU, as kiln's CPU tests compare.
    ref = {"formula": "splitmix64(fnv1a64(name) + i * 0x9E3779B97F4A7C15)", "models": {}}
    for size in [s for s in args.sizes.split(",") if s]:
        m = YOLOv10(f"yolov10{size}.yaml")
        manifest = randomize(Hub(m.model))
        m.model.eval()
        entry = {"manifest": manifest, "names": {str(k): v for k, v in m.model.names.items()}, "runs": []}
        for imgsz, count in (map(int, r.split(":")) for r in args.runs.split(",")):
            picks = images[:count]
            t0 = time.time()
            entry["runs"].append({"imgsz": imgsz, "images": predict(m, picks, imgsz, 0.0, "cpu")})
            print(f"yolov10{size} imgsz {imgsz}: {len(picks)} images in {time.time() - t0:.1f} s", flush=True)
        ref["models"][f"yolov10{size}"] = entry
    if args.merge_into:
        with open(args.merge_into) as f:
            earlier = json.load(f)
        assert earlier["formula"] == ref["formula"]
        earlier["models"].update(ref["models"])
        ref = earlier
    if ref["models"]:
        with open(os.path.join(args.out, "random_reference.json"), "w") as f:
            json.dump(ref, f)

    if args.train_epochs <= 0:
        return
    # A briefly trained yolov10n, so that thresholded detections and mAP mean something.
    train_dir = os.path.join(args.data, "coco-train2017-128")
    names = {}
    with open(os.path.join(val_dir, "classes.yaml")) as f:
        for line in f:
            line = line.strip()
            if line and line.split(":")[0].isdigit():
                k, v = line.split(":", 1)
                names[int(k)] = v.strip()
    data_yaml = "/tmp/coco128-kiln.yaml"
    with open(data_yaml, "w") as f:
        f.write(f"path: /\ntrain: {os.path.abspath(train_dir)}/images\nval: {os.path.abspath(val_dir)}/images\n")
        f.write("names:\n" + "".join(f"  {k}: {v}\n" for k, v in names.items()))
    m = YOLOv10("yolov10n.yaml")
    t0 = time.time()
    # SGD at Ultralytics' default lr0: its "auto" optimiser picks AdamW at lr 1.2e-4 for short runs
    # on 80 classes, which left an earlier 165-epoch run at mAP 0.0002. TF32 for training only.
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
    m.train(data=data_yaml, epochs=args.train_epochs, time=args.train_minutes / 60, imgsz=640, batch=32, workers=12,
            device=0, amp=False, plots=False, val=False, project="/tmp/yolo-runs", name="coco128", exist_ok=True,
            seed=0, deterministic=False, verbose=False, optimizer="SGD", lr0=0.01, cache="ram")
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    print(f"trained in {time.time() - t0:.0f} s", flush=True)
    trained = YOLOv10("/tmp/yolo-runs/coco128/weights/last.pt")
    trained.model.float().eval()
    save_hub(Hub(trained.model), os.path.join(args.out, "yolov10n-coco128"), "yolov10n.yaml", names)
    tref = {"conf": 0.25, "imgsz": 640}
    tref["detections"] = predict(trained, images, 640, 0.25, "cpu")
    tref["raw"] = predict(trained, images[:4], 640, 0.0, "cpu")
    for batch in (1, 32):
        metrics = trained.val(data=data_yaml, imgsz=640, batch=batch, conf=0.001, device=0, half=False, plots=False,
                              verbose=False, project="/tmp/yolo-val", name=f"b{batch}", exist_ok=True)
        tref[f"val_batch{batch}"] = {"map50_95": float(metrics.box.map), "map50": float(metrics.box.map50)}
        print(f"val batch {batch}: mAP50-95 {metrics.box.map:.4f} mAP50 {metrics.box.map50:.4f}", flush=True)
    print(f"{sum(len(d['scores']) for d in tref['detections'])} detections at conf 0.25 on {len(images)} images")
    with open(os.path.join(args.out, "trained_reference.json"), "w") as f:
        json.dump(tref, f)


if __name__ == "__main__":
    main()
