#!/usr/bin/env bash
# On a GPU machine, from the repository root, with STAGE made by `pack.sh STAGE a` plus wrk and
# its libluajit in STAGE/tools (and, optionally, build/bench/kiln_image_preprocess_bench with its
# libbenchmark): one core's decoding and preprocessing of the sample image, an fp16 b0 bundle
# planned there, `kiln bench` of it, `kiln eval` over 4096 copies of the sample image (decoding on
# every core while the GPU runs the previous batch), then bench/serve/load.sh against `kiln serve`
# on the GPU: one client for 15 s (latency), 64 clients for 60 s with one and with two engine
# instances (with a snapshot of the busiest threads), then 256 clients with a short queue
# (overload). Results go to OUT.
#   scripts/device/run-serve.sh STAGE OUT
set -uo pipefail
stage=${1:?usage: run-serve.sh STAGE OUT}
OUT=${2:?usage: run-serve.sh STAGE OUT}
mkdir -p /tmp/k "$OUT"
tar -xJf "$stage/kiln.tar.xz" -C /tmp/k
# cuDNN 9 comes with PyTorch there; kiln opens it when it is on the library path.
cudnn=$(python3 -c 'import nvidia.cudnn; print(nvidia.cudnn.__path__[0])' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/tmp/k/lib:$stage/tools:/usr/local/cuda/lib64:$cudnn KILN_PROGRESS=0 PATH=$stage/tools:$PATH
K=/tmp/k/bin/kiln
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; lscpu | grep -E 'Model name|Thread|Core'; nproc; } |
  tee "$OUT/env.txt"
[ -x "$stage/tools/kiln_image_preprocess_bench" ] &&
  timeout 60 "$stage/tools/kiln_image_preprocess_bench" 2>&1 | tail -7 | tee "$OUT/preprocess.txt"
$K build "$stage/data/checkpoints/efficientnet_b0.tfhub-transplant" -o /tmp/b0.bundle --precision fp16 --batch 1,32,128 \
  > /dev/null 2>&1
timeout 120 $K bench /tmp/b0.bundle --batch 1,32 --iters 200 --warmup 200 2>&1 | tee "$OUT/bench.txt" | tail -3
images=$(mktemp -d)
for i in $(seq 4096); do
  cp samples/coffee.webp "$images/$i.webp"
  printf '%s.webp\t967\n' "$i"
done > "$images/labels.tsv"
timeout 120 $K eval /tmp/b0.bundle --data "$images" --batch 32 2>&1 | tee "$OUT/eval.txt" | tail -2
WRK_THREADS=1 timeout 60 bash bench/serve/load.sh $K /tmp/b0.bundle samples/coffee.webp 1 15 '{"max_batch_size": 32}' \
  cuda 2>&1 | tee -a "$OUT/load.txt" | grep -v bucket
for instances in 1 2; do
  [ "$instances" = 1 ] && (sleep 40 && top -H -b -n 1 -w 160 | head -40 > "$OUT/top.txt") &
  WRK_THREADS=4 timeout 150 bash bench/serve/load.sh $K /tmp/b0.bundle samples/coffee.webp 64 60 \
    "{\"max_batch_size\": 32, \"instances\": $instances}" cuda 2>&1 | tee -a "$OUT/load.txt" | grep -v bucket
done
WRK_THREADS=4 timeout 100 bash bench/serve/load.sh $K /tmp/b0.bundle samples/coffee.webp 256 30 \
  '{"max_batch_size": 32, "max_queue_size": 64}' cuda 2>&1 | tee -a "$OUT/load.txt" | grep -v bucket
