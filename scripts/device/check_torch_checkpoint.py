# Writes a checkpoint of the stage's marian-tiny-en-de fixture as PyTorch's pytorch_model.bin
# (transformers' save_pretrained without safetensors, or torch.save of the state dict where that
# is gone), builds it with kiln, and checks that it translates exactly as the safetensors build.
#   python3 scripts/device/check_torch_checkpoint.py KILN STAGE
import os, shutil, subprocess, sys

import torch
from transformers import MarianMTModel

kiln, stage = sys.argv[1:3]
src = f"{stage}/data/checkpoints/marian-tiny-en-de"
out = "/tmp/marian-torch"
shutil.rmtree(out, ignore_errors=True)
model = MarianMTModel.from_pretrained(src)
try:
    model.save_pretrained(out, safe_serialization=False)
except Exception as e:
    print("save_pretrained(safe_serialization=False) failed:", e)
# transformers versions that only write safetensors ignore the flag or fail: torch.save then.
if not os.path.exists(f"{out}/pytorch_model.bin"):
    os.makedirs(out, exist_ok=True)
    model.config.save_pretrained(out)
    torch.save(model.state_dict(), f"{out}/pytorch_model.bin")
for f in os.listdir(src):
    if f not in ("model.safetensors", "config.json") and not os.path.exists(f"{out}/{f}"):
        shutil.copy(f"{src}/{f}", out)
if os.path.exists(f"{out}/model.safetensors"):
    os.remove(f"{out}/model.safetensors")
print("files:", sorted(os.listdir(out)))
lines = [l.rstrip("\n") for l in open(f"{stage}/data/data/text/wmt22.en-de.en", encoding="utf-8")][:50]
open("/tmp/fifty.txt", "w").write("\n".join(lines) + "\n")
texts = {}
for name, folder in (("safetensors", src), ("pytorch_model.bin", out)):
    bundle = f"/tmp/{name}.bundle"
    built = subprocess.run([kiln, "build", folder, "-o", bundle], capture_output=True, text=True)
    if built.returncode:
        print(f"kiln build {name} failed: {built.stderr.strip()}")
        sys.exit(1)
    texts[name] = subprocess.run([kiln, "translate", bundle, "--input", "/tmp/fifty.txt", "--device", "cpu"],
                                 check=True, capture_output=True, text=True).stdout
same = texts["safetensors"] == texts["pytorch_model.bin"]
print(f"pytorch_model.bin build translates {'exactly as' if same else 'DIFFERENTLY from'} the safetensors build "
      f"({len(lines)} lines)")
sys.exit(0 if same else 1)
