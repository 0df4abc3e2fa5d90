#!/usr/bin/env bash
# On the GPU machine's CPU, from the repository root, with STAGE made by `pack.sh STAGE a`:
# efficientnet_b0 fp32 on kiln's fast CPU kernels, its reference kernels (batch 1), ONNX Runtime
# and PyTorch, at THREADS (default "2 16") threads and batch 1 and 8, each peer in its own
# process, one after another; with bin/kiln-baseline packed (pack.sh BASELINE=FILE) that build too,
# after kiln. kiln's bundle is built once per thread count, with those threads: an fp32 build
# times the CPU kernels' variants on this CPU and keeps its choices for that thread count; the
# baseline builds its own (a plan naming a variant a build lacks runs that node's default).
# Results go to OUT (JSON lines; the ONNX model, split in 15 MB parts, for timing ONNX Runtime
# elsewhere).
#   scripts/device/run-cpu.sh STAGE OUT
set -uo pipefail
stage=${1:?usage: run-cpu.sh STAGE OUT}
OUT=${2:?usage: run-cpu.sh STAGE OUT}
mkdir -p /tmp/k "$OUT"
tar -xJf "$stage/kiln.tar.xz" -C /tmp/k
export LD_LIBRARY_PATH=/tmp/k/lib KILN_PROGRESS=0
K=/tmp/k/bin/kiln
ckpt=$stage/data/checkpoints/efficientnet_b0.tfhub-transplant
{ date -u; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|Flags' | cut -c1-200;
  python3 -c 'import torch, onnxruntime; print("torch", torch.__version__, "onnxruntime", onnxruntime.__version__)'; } |
  tee "$OUT/env.txt"
for t in ${THREADS:-2 16}; do
  $K --threads "$t" build "$ckpt" -o "/tmp/b0-$t.bundle" --batch 1,8 | tee -a "$OUT/build.txt"
  [ -x /tmp/k/bin/kiln-baseline ] &&
    /tmp/k/bin/kiln-baseline --threads "$t" build "$ckpt" -o "/tmp/b0-$t-baseline.bundle" --batch 1,8 > /dev/null
done
python3 bench/peers/cpu_peers.py --checkpoint "$ckpt" --peer onnxruntime --threads 1 --batch 1 --samples 3 \
  --onnx /tmp/b0.onnx > /dev/null 2> "$OUT/export.err"
for round in $(seq "${ROUNDS:-2}"); do
  for t in ${THREADS:-2 16}; do
    timeout 120 $K bench "/tmp/b0-$t.bundle" --device cpu --threads "$t" --batch 1,8 --iters 30 --warmup 5 --json |
      sed "s|^|{\"peer\": \"kiln\", \"threads\": $t, \"round\": $round, \"run\": |; s|$|}|" | tee -a "$OUT/cpu.jsonl"
    # An earlier commit's build (pack.sh BASELINE=FILE), right after, on its own bundle.
    [ -x /tmp/k/bin/kiln-baseline ] && timeout 120 /tmp/k/bin/kiln-baseline bench "/tmp/b0-$t-baseline.bundle" --device cpu \
      --threads "$t" --batch 1,8 --iters 30 --warmup 5 --json |
      sed "s|^|{\"peer\": \"kiln-baseline\", \"threads\": $t, \"round\": $round, \"run\": |; s|$|}|" |
      tee -a "$OUT/cpu.jsonl"
    [ "$round" = 1 ] && timeout 120 $K bench "/tmp/b0-$t.bundle" --device cpu-reference --threads "$t" --batch 1 --iters 10 \
      --warmup 2 --json | sed "s|^|{\"peer\": \"kiln-reference\", \"threads\": $t, \"round\": $round, \"run\": |; s|$|}|" |
      tee -a "$OUT/cpu.jsonl"
    for peer in onnxruntime torch; do
      timeout 180 python3 bench/peers/cpu_peers.py --checkpoint "$ckpt" --peer $peer --threads "$t" --batch 1,8 \
        --onnx /tmp/b0.onnx 2>> "$OUT/peers.err" | sed "s|^{|{\"round\": $round, |" | tee -a "$OUT/cpu.jsonl"
    done
  done
done
[ -f /tmp/b0.onnx ] && split -b 15M -d /tmp/b0.onnx "$OUT/b0.onnx.part"
tail -n 3 "$OUT/peers.err" "$OUT/export.err"
