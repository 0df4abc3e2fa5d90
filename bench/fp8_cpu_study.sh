#!/usr/bin/env bash
# The accuracy half of the FP8 study, on the CPU: builds efficientnet_b0 with every FP8 recipe the
# family ships (calibrated on imagenet-calib-500), evaluates each on the 1300 held-out images with
# the CPU backend's FP8 emulation, against the fp32 CPU reference. Writes a markdown table.
#   bench/fp8_cpu_study.sh OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${KILN_TEST_DATA:-$root/../shared}
out=${1:?usage: fp8_cpu_study.sh OUT_DIR}
kiln=$root/build/bin/kiln
ckpt=$shared/checkpoints/efficientnet_b0.tfhub-transplant
mkdir -p "$out"
export KILN_PROGRESS=0
$kiln build "$ckpt" -o "$out/fp32.bundle" > /dev/null
$kiln eval "$out/fp32.bundle" --device cpu --data "$shared/data/imagenet-val-1300" \
  --save-logits "$out/fp32_logits.safetensors" --json > "$out/fp32.json"
{
  echo "| recipe | FP8 layers | bundle MiB | calibration s | top-1 | top-5 | agreement with fp32 | max / mean abs logit diff |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  python3 -c "import json, os, sys; r = json.load(open(sys.argv[1])); mib = os.path.getsize(sys.argv[2]) / 1048576
print(f'| fp32 (reference) | 0 | {mib:.1f} | - | {r[\"top1\"]:.2f}% | {r[\"top5\"]:.2f}% | - | - |')" "$out/fp32.json" "$out/fp32.bundle"
} > "$out/table.md"
for recipe in fp8-pointwise fp8-pointwise-depthwise fp8-project fp8-pointwise-p9999 fp8-e4m3-expanded; do
  $kiln build "$ckpt" -o "$out/$recipe.bundle" --precision fp8 --recipe "$recipe" \
    --calib "$shared/data/imagenet-calib-500" > "$out/$recipe.build.txt"
  $kiln eval "$out/$recipe.bundle" --device cpu --data "$shared/data/imagenet-val-1300" \
    --reference "$out/fp32_logits.safetensors" --json > "$out/$recipe.json"
  python3 - "$out" "$recipe" >> "$out/table.md" <<'PY'
import json, os, re, sys
out, recipe = sys.argv[1], sys.argv[2]
r = json.load(open(f"{out}/{recipe}.json"))
build = open(f"{out}/{recipe}.build.txt").read()
layers = re.search(r"(\d+) layers in FP8", build).group(1)
calib = re.search(r"calibrated in ([\d.]+) s", build).group(1)
mib = os.path.getsize(f"{out}/{recipe}.bundle") / 1048576
print(f"| {recipe} | {layers} | {mib:.1f} | {calib} | {r['top1']:.2f}% | {r['top5']:.2f}% | {r['agreement']:.2f}% | "
      f"{r['max_abs_logit_diff']:.2f} / {r['mean_abs_logit_diff']:.3f} |")
PY
done
cat "$out/table.md"
