#!/usr/bin/env bash
# On a GPU machine, from the repository root, with STAGE made by `pack.sh STAGE a`: the GPU
# tests, the op harness on CUDA, fp16 and FP8 builds (FP8 calibrated on the 24 packed images:
# enough for timing), kiln bench of each (and of bin/kiln-baseline's fp16 build, alternating,
# when packed), the PyTorch peers in the same run, timm parity for b0-b4. Results go to OUT. TESTS=0 skips the tests, PEERS=0 the
# peers, PARITY=0 the parity.
#   scripts/device/run-a.sh STAGE OUT
set -uo pipefail
stage=${1:?usage: run-a.sh STAGE OUT}
OUT=${2:?usage: run-a.sh STAGE OUT}
mkdir -p /tmp/k "$OUT"
tar -xJf "$stage/kiln.tar.xz" -C /tmp/k
# cuBLASLt comes with the machine's CUDA toolkit.
# cuDNN 9 comes with PyTorch there; kiln opens it when it is on the library path.
cudnn=$(python3 -c 'import nvidia.cudnn; print(nvidia.cudnn.__path__[0])' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/tmp/k/lib:/usr/local/cuda/lib64:$cudnn KILN_TEST_DATA=$stage/data KILN_PROGRESS=0
K=/tmp/k/bin/kiln
ckpt=$KILN_TEST_DATA/checkpoints/efficientnet_b0.tfhub-transplant
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; python3 -c 'import torch, timm; print("torch", torch.__version__, "timm", timm.__version__)'; } | tee "$OUT/env.txt"
if [ "${TESTS:-1}" = 1 ]; then
  echo "== GPU tests"
  timeout 300 /tmp/k/bin/kiln_gpu_tests 2>&1 | tee "$OUT/gpu_tests.log" | grep -E '^\[  |Failure|Expected|Which|actual|fell' | tail -40
  echo "== op harness on CUDA"
  timeout 300 /tmp/k/bin/kiln_op_harness --backend cuda 2>&1 | tee "$OUT/op_harness.log" | tail -40
fi
echo "== build fp16 with planning"
$K build "$ckpt" -o /tmp/b0-fp16.bundle --precision fp16 --batch 1,32,128 2>&1 | sed "s|$KILN_TEST_DATA|<data>|" | tee -a "$OUT/env.txt"
bench() {  # bench KILN BUNDLE LABEL
  timeout 120 "$1" bench "$2" --batch 1,32,128 --iters 100 --warmup 300 --json | sed "s|^|{\"kiln\": \"$3\", \"run\": |; s|$|}|" >> "$OUT/kiln_bench.jsonl"
}
if [ -x /tmp/k/bin/kiln-baseline ]; then
  /tmp/k/bin/kiln-baseline build "$ckpt" -o /tmp/b0-fp16-baseline.bundle --precision fp16 --batch 1,32,128 >/dev/null 2>&1
fi
echo "== kiln bench"
timeout 120 $K bench /tmp/b0-fp16.bundle --batch 1,32,128 --iters 100 --warmup 300 --profile --plan 2>&1 | tee "$OUT/kiln_bench.txt" | grep -vE '^ {9}[a-z_0-9]+ ' | head -40
for round in $(seq "${ROUNDS:-3}"); do
  bench $K /tmp/b0-fp16.bundle new
  [ -x /tmp/k/bin/kiln-baseline ] && bench /tmp/k/bin/kiln-baseline /tmp/b0-fp16-baseline.bundle baseline
done
for r in ${FP8_RECIPES:-fp8-pointwise fp8-e4m3-expanded}; do
  b=/tmp/b0-$r.bundle
  $K build "$ckpt" -o "$b" --precision fp8 --recipe "$r" --calib "$KILN_TEST_DATA/data/imagenet-calib-500" --batch 1,32,128 >/dev/null 2>&1
  echo "== kiln bench $(basename "$b")"
  timeout 120 $K bench "$b" --batch 1,32,128 --iters 100 --warmup 300 --profile 2>&1 | tee -a "$OUT/kiln_bench_fp8.txt" | head -12
  bench $K "$b" "$(basename "$b" .bundle)"
done
if [ "${PEERS:-1}" = 1 ]; then
  echo "== peers"
  timeout 330 python3 bench/peers/torch_peers.py --checkpoint "$ckpt" --modes eager,graph,compile 2>"$OUT/peers.err" | tee "$OUT/peers.jsonl"
  tail -3 "$OUT/peers.err"
  echo "== kiln bench again, after the peers"
  bench $K /tmp/b0-fp16.bundle new-after-peers
  [ -x /tmp/k/bin/kiln-baseline ] && bench /tmp/k/bin/kiln-baseline /tmp/b0-fp16-baseline.bundle baseline-after-peers
fi
grep -h median "$OUT/kiln_bench.jsonl" | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line); r = j["run"]
    print("%-28s batch %4d %8.3f ms" % (j["kiln"], r["batch"], r["median_ms"]))' | tail -40
[ "${PARITY:-1}" = 1 ] || exit 0
echo "== parity b0-b4"
timeout 300 python3 bench/parity/timm_parity.py --kiln $K --work /tmp/parity 2>&1 | tee "$OUT/parity.jsonl"
