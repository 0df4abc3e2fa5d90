#!/usr/bin/env bash
# On the GPU machine (run from the repository root with .carry/b carried): the fp16 engine on
# the 1300 held-out images against the CPU fp32 reference logits computed beforehand
# (scripts/device/pack.sh b). Results go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/k "$OUT"
tar -xJf .carry/b/kiln.tar.xz -C /tmp/k
export LD_LIBRARY_PATH=/tmp/k/lib KILN_PROGRESS=0
K=/tmp/k/bin/kiln
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee "$OUT/env.txt"
timeout 300 $K eval .carry/b/b0-fp16.bundle --device cuda --data .carry/b/val --batch 64 \
  --reference .carry/b/cpu_fp32_logits.safetensors 2>&1 | tee "$OUT/eval.txt"
timeout 300 $K eval .carry/b/b0-fp16.bundle --device cuda --data .carry/b/val --batch 64 \
  --reference .carry/b/cpu_fp32_logits.safetensors --json 2>/dev/null | tail -1 > "$OUT/eval.json"
cat "$OUT/eval.json"
