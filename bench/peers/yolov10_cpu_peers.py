#!/usr/bin/env python3
"""Times YOLOv10 on the CPU in PyTorch (THU-MIG/yolov10's Ultralytics source), or exports it to ONNX
for ONNX Runtime (bench/peers/onnxruntime_node.mjs times that where ONNX Runtime's Python package
is missing). The peers of kiln's yolov10 family on the CPU.

The weights come from a checkpoint folder in the Hub layout kiln builds from (config.json +
model.safetensors, as jameslahm/yolov10* store them), loaded into `YOLOv10("<model>.yaml")` with
strict key checking. fp32, NCHW input at SIZE x SIZE.
  torch    the DetectionModel (BN folded, one-to-one head and its top 300) under
           torch.inference_mode, torch.set_num_threads(THREADS); WARMUP calls, then SAMPLES calls
           each timed alone; median, p10, p90 and min in ms, one JSON object per batch size
  export   Ultralytics' own ONNX export (opset 17, dynamic batch, not simplified): the network and
           its one-to-one head's top 300 as [B, 300, 6], what kiln's graph computes too

  python3 yolov10_cpu_peers.py --ultralytics PARENT --checkpoint DIR --peer torch --threads 2 --batch 1,8
  python3 yolov10_cpu_peers.py --ultralytics PARENT --checkpoint DIR --peer export --onnx yolov10n.onnx
PARENT is a folder holding the THU-MIG/yolov10 repository's `ultralytics/` package.
"""
import argparse
import json
import os
import shutil
import struct
import sys
import types

import numpy as np
import torch

from cpu_peers import time_calls  # the same timing as the EfficientNet peers (beside this file)


def read_safetensors(path):
    """A safetensors file as {name: tensor} (F32 and I64 only: what these checkpoints hold)."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    dtypes = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        data = np.frombuffer(blob[8 + n + begin:8 + n + end], dtype=dtypes[t["dtype"]])
        out[name] = torch.from_numpy(data.copy().reshape(t["shape"]))
    return out


def import_yolov10(parent):
    """Ultralytics' YOLOv10 class. Its module imports huggingface_hub for the Hub mixin (upload and
    download, unused here) and the exporter py-cpuinfo for a log line: where either is missing a
    stand-in module takes its place."""
    sys.path.insert(0, parent)
    os.environ.setdefault("YOLO_CONFIG_DIR", "/tmp/yolo-config")
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        hub = types.ModuleType("huggingface_hub")

        class PyTorchModelHubMixin:
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__()

        hub.PyTorchModelHubMixin = PyTorchModelHubMixin
        sys.modules["huggingface_hub"] = hub
    try:
        import cpuinfo  # noqa: F401
    except ImportError:
        info = types.ModuleType("cpuinfo")
        info.get_cpu_info = lambda: {"brand_raw": "unknown CPU"}
        sys.modules["cpuinfo"] = info
    from ultralytics import YOLOv10

    return YOLOv10


class Hub(torch.nn.Module):
    """The state-dict layout of THU-MIG's hub mixin: the YOLOv10 wrapper's `model` attribute."""

    def __init__(self, detection_model):
        super().__init__()
        self.model = detection_model


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ultralytics", required=True, help="folder holding THU-MIG/yolov10's ultralytics/ package")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--peer", choices=["torch", "export"], required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", default="1,8")
    p.add_argument("--size", type=int, default=640)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--onnx", default="", help="where the export is written")
    a = p.parse_args()

    YOLOv10 = import_yolov10(a.ultralytics)
    config = json.load(open(os.path.join(a.checkpoint, "config.json")))
    model = YOLOv10(config["model"])
    Hub(model.model).load_state_dict(read_safetensors(os.path.join(a.checkpoint, "model.safetensors")), strict=True)
    arch = os.path.splitext(config["model"])[0]
    if a.peer == "export":
        if not a.onnx:
            p.error("--peer export needs --onnx")
        written = model.export(format="onnx", opset=17, dynamic=True, simplify=False, imgsz=a.size)
        shutil.move(written, a.onnx)
        print(json.dumps({"exported": a.onnx, "model": arch, "torch": torch.__version__}))
        return
    # As the GPU comparison (scripts/device/yolov10_speed.py) runs it: BN folded, the one-to-one
    # head and its top 300 only (eager mode also runs the one-to-many training head otherwise).
    net = model.model.fuse(verbose=False).float().eval()
    net.model[-1].export = True
    net.model[-1].format = "engine"
    torch.set_num_threads(a.threads)
    for batch in (int(b) for b in a.batch.split(",")):
        x = torch.rand(batch, 3, a.size, a.size)
        with torch.inference_mode():
            stats = time_calls(lambda: net(x), a.warmup, a.samples)
        print(json.dumps({"peer": "torch", "version": torch.__version__, "model": arch, "threads": a.threads,
                          "batch": batch, **{k: round(v, 4) for k, v in stats.items()}}), flush=True)


if __name__ == "__main__":
    main()
