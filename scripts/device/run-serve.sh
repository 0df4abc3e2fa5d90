#!/usr/bin/env bash
# On a GPU machine, from the repository root, with STAGE made by `pack.sh STAGE a` plus wrk and
# its libluajit in STAGE/tools: an fp16 b0 bundle planned there, `kiln bench` of it, then
# bench/serve/load.sh against `kiln serve` on the GPU: 64 clients for 60 s with one and with two
# engine instances, then 256 clients with a short queue (overload). Results go to OUT.
#   scripts/device/run-serve.sh STAGE OUT
set -uo pipefail
stage=${1:?usage: run-serve.sh STAGE OUT}
OUT=${2:?usage: run-serve.sh STAGE OUT}
mkdir -p /tmp/k "$OUT"
tar -xJf "$stage/kiln.tar.xz" -C /tmp/k
export LD_LIBRARY_PATH=/tmp/k/lib:$stage/tools:/usr/local/cuda/lib64 KILN_PROGRESS=0 PATH=$stage/tools:$PATH
K=/tmp/k/bin/kiln
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; lscpu | grep 'Model name'; nproc; } | tee "$OUT/env.txt"
$K build "$stage/data/checkpoints/efficientnet_b0.tfhub-transplant" -o /tmp/b0.bundle --precision fp16 --batch 1,32,128 \
  > /dev/null 2>&1
timeout 120 $K bench /tmp/b0.bundle --batch 1,32 --iters 200 --warmup 200 2>&1 | tee "$OUT/bench.txt" | tail -3
for instances in 1 2; do
  WRK_THREADS=4 timeout 150 bash bench/serve/load.sh $K /tmp/b0.bundle samples/coffee.webp 64 60 \
    "{\"max_batch_size\": 32, \"instances\": $instances}" cuda 2>&1 | tee -a "$OUT/load.txt" | grep -v bucket
done
WRK_THREADS=4 timeout 100 bash bench/serve/load.sh $K /tmp/b0.bundle samples/coffee.webp 256 30 \
  '{"max_batch_size": 32, "max_queue_size": 64}' cuda 2>&1 | tee -a "$OUT/load.txt" | grep -v bucket
