#!/usr/bin/env bash
# On a GPU machine, from the repository root, with STAGE made by `pack.sh STAGE b`: each packed
# bundle on the 1300 held-out images, on the GPU, against the CPU fp32 reference logits computed
# beforehand and against the same bundle on this machine's CPU (for FP8 bundles: the CPU
# backend's FP8 emulation); and an fp16 build of the checkpoint against the fp32 logits. Results
# go to OUT/eval.jsonl, one line per comparison.
#   scripts/device/run-b.sh STAGE OUT
set -uo pipefail
stage=${1:?usage: run-b.sh STAGE OUT}
OUT=${2:?usage: run-b.sh STAGE OUT}
mkdir -p /tmp/k "$OUT"
tar -xJf "$stage/kiln.tar.xz" -C /tmp/k
# cuDNN 9 comes with PyTorch there; kiln opens it when it is on the library path.
cudnn=$(python3 -c 'import nvidia.cudnn; print(nvidia.cudnn.__path__[0])' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/tmp/k/lib:/usr/local/cuda/lib64:$cudnn KILN_PROGRESS=0
K=/tmp/k/bin/kiln
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
evaluate() {  # evaluate BUNDLE REFERENCE
  echo "== $(basename "$1") against $(basename "$2")"
  line=$(timeout 280 $K eval "$1" --device cuda --data "$stage/val" --batch 64 --reference "$2" --json 2>>"$OUT/eval.err" | tail -1)
  echo "{\"bundle\": \"$(basename "$1")\", \"reference\": \"$(basename "$2")\", \"eval\": ${line:-null}}" | tee -a "$OUT/eval.jsonl"
}
evaluate "$stage/bundles/b0-fp16.bundle" "$stage/cpu_fp32_logits_f16.safetensors"
for b in "$stage"/bundles/b0-fp8-*.bundle; do
  evaluate "$b" cpu
  evaluate "$b" "$stage/cpu_fp32_logits_f16.safetensors"
done
