#!/usr/bin/env bash
# On the GPU machine (run from the repository root with .carry/a carried): GPU tests, fp16 build
# with planning, kiln bench of it and of the carried FP8 bundles, the PyTorch peers in the same
# run, timm parity for b0-b4. Results go to $OUT. TESTS=0 skips the GPU tests, PEERS=0 the
# PyTorch peers, PARITY=0 the b0-b4 parity.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/k "$OUT"
tar -xJf .carry/a/kiln.tar.xz -C /tmp/k
export LD_LIBRARY_PATH=/tmp/k/lib KILN_TEST_DATA=$PWD/.carry/a/shared KILN_PROGRESS=0
K=/tmp/k/bin/kiln
ckpt=$KILN_TEST_DATA/checkpoints/efficientnet_b0.tfhub-transplant
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; python3 -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)'; } | tee "$OUT/env.txt"
if [ "${TESTS:-1}" = 1 ]; then
echo "== GPU tests"
timeout 240 /tmp/k/bin/kiln_gpu_tests 2>&1 | tee "$OUT/gpu_tests.log" | grep -E '^\[  |cuda|Failure|Expected|Which|actual' | tail -40
fi
echo "== build fp16 with planning"
/usr/bin/time -f "build wall %e s" $K build "$ckpt" -o /tmp/b0-fp16.bundle --precision fp16 --batch 1,32,128 2>&1 | tee -a "$OUT/env.txt"
echo "== kiln bench"
timeout 120 $K bench /tmp/b0-fp16.bundle --batch 1,32,128 --iters 100 --warmup 300 --profile 2>&1 | tee "$OUT/kiln_bench.txt"
timeout 120 $K bench /tmp/b0-fp16.bundle --batch 1,32,128 --iters 100 --warmup 300 --json --plan > "$OUT/kiln_bench.jsonl"
for b in .carry/a/bundles/*.bundle; do
  echo "== kiln bench $(basename "$b")"
  timeout 120 $K bench "$b" --batch 1,32,128 --iters 100 --warmup 300 --profile 2>&1 | tee -a "$OUT/kiln_bench_fp8.txt"
  timeout 120 $K bench "$b" --batch 1,32,128 --iters 100 --warmup 300 --json --plan >> "$OUT/kiln_bench.jsonl"
done
if [ "${PEERS:-1}" = 1 ]; then
echo "== peers"
timeout 330 python3 bench/peers/torch_peers.py --checkpoint "$ckpt" --modes eager,graph,compile 2>"$OUT/peers.err" | tee "$OUT/peers.jsonl"
tail -3 "$OUT/peers.err"
echo "== kiln bench again, after the peers"
timeout 120 $K bench /tmp/b0-fp16.bundle --batch 1,32,128 --iters 100 --warmup 300 --json >> "$OUT/kiln_bench.jsonl"
tail -3 "$OUT/kiln_bench.jsonl"
fi
[ "${PARITY:-1}" = 1 ] || exit 0
echo "== parity b0-b4"
timeout 150 python3 bench/parity/timm_parity.py --kiln $K --work /tmp/parity 2>&1 | tee "$OUT/parity.jsonl"
echo "== which carried libraries the machine already has"
for l in /tmp/k/lib/*; do n=$(basename "$l"); ldconfig -p | grep -q "$n" && echo "system has $n"; done >> "$OUT/env.txt"
