#!/usr/bin/env bash
# On the GPU machine (run from the repository root with .carry/b carried): each carried bundle on
# the 1300 held-out images, on the GPU, against the CPU fp32 reference logits computed beforehand
# (scripts/device/pack.sh b) and against the same bundle on this machine's CPU (for FP8 bundles:
# the CPU backend's FP8 emulation). Results go to $OUT/eval.jsonl, one line per comparison.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/k "$OUT"
tar -xJf .carry/b/kiln.tar.xz -C /tmp/k
export LD_LIBRARY_PATH=/tmp/k/lib KILN_PROGRESS=0
K=/tmp/k/bin/kiln
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } | tee "$OUT/env.txt"
for b in .carry/b/bundles/*.bundle; do
  for ref in .carry/b/cpu_fp32_logits.safetensors cpu; do
    echo "== $(basename "$b") against $ref"
    line=$(timeout 280 $K eval "$b" --device cuda --data .carry/b/val --batch 64 --reference "$ref" --json 2>>"$OUT/eval.err" | tail -1)
    echo "{\"bundle\": \"$(basename "$b")\", \"reference\": \"$(basename "$ref")\", \"eval\": ${line:-null}}" | tee -a "$OUT/eval.jsonl"
  done
done
