#!/usr/bin/env bash
# On a GPU machine, from the repository root, with STAGE made by `pack.sh STAGE s` (tests and
# timing) or `pack.sh STAGE t` (timing only): the encoder-decoder runs. Results go to OUT.
#   TESTS=1   the GPU tests (not the EfficientNet ones, whose checkpoint stage s does not hold)
#             and the op harness on CUDA; stage s only (default: 1 where the stage has them)
#   AB=1      where bin/kiln-baseline is packed (BASELINE=... pack.sh): the decoder step
#             (`kiln bench --graph decoder_topk`, 1 and 128 rows) and `kiln eval` (beam 4 at
#             batch 32 over 256 lines, greedy over 24), baseline and kiln alternating, two rounds
#   PEERS=1   seq2seq_speed.py's tables against transformers (about 3 minutes a model)
#   MODELS    "bart-large-cnn opus-mt-en-de" (random weights of those sizes)
#   scripts/device/run-s.sh STAGE OUT
set -uo pipefail
stage=${1:?usage: run-s.sh STAGE OUT}
OUT=${2:?usage: run-s.sh STAGE OUT}
mkdir -p /tmp/k "$OUT"
tar -xJf "$stage/kiln.tar.xz" -C /tmp/k
# A stage's data comes as a folder or, to be copied in fewer bytes, as data.tar.xz.
data=$stage/data
if [ -f "$stage/data.tar.xz" ]; then
  mkdir -p /tmp/stage-data && tar -xJf "$stage/data.tar.xz" -C /tmp/stage-data && data=/tmp/stage-data/data
fi
# cuDNN 9 comes with PyTorch there; kiln opens it when it is on the library path.
cudnn=$(python3 -c 'import nvidia.cudnn; print(nvidia.cudnn.__path__[0])' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/tmp/k/lib:/usr/local/cuda/lib64:$cudnn KILN_TEST_DATA=$data KILN_PROGRESS=0 PYTHONUNBUFFERED=1
K=/tmp/k/bin
models=${MODELS:-bart-large-cnn opus-mt-en-de}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee "$OUT/env.txt"
# The random checkpoints and their fp16 bundles (no saved plan: each run plans, as timed below).
for m in $models; do
  MODEL_ONLY=1 timeout 120 python3 scripts/device/seq2seq_speed.py $K/kiln "$(dirname "$data")" "$OUT" "$m" > /dev/null 2>&1 &&
    timeout 90 $K/kiln build "/tmp/$m-random" -o "/tmp/$m.bundle" --precision fp16 --no-plan > /dev/null ||
    echo "no $m model"
done &
if [ "${TESTS:-1}" = 1 ] && [ -x $K/kiln_gpu_tests ]; then
  echo "== GPU tests"
  timeout 200 $K/kiln_gpu_tests --gtest_filter='-*B0*:*BatchesAgree*' 2>&1 | tee "$OUT/gpu_tests.log" |
    grep -E '^\[  |Failure|Expected|Which|actual' | tail -20
  echo "== op harness on CUDA"
  timeout 200 $K/kiln_op_harness --backend cuda 2>&1 | tee "$OUT/op_harness.log" | tail -4
fi
wait
if [ "${AB:-1}" = 1 ] && [ -x $K/kiln-baseline ]; then
  echo "== decoder step and eval, kiln-baseline against kiln"
  export KILN_TIMING_CACHE=off  # each process plans by timing, as a first run does
  values=(--values "length=48,position=47,source_length=40" --iters 20 --warmup 50)
  head -256 "$data/data/text/wmt22.en-de.en" > /tmp/beam.txt
  head -24 "$data/data/text/wmt22.en-de.en" > /tmp/greedy.txt
  # Rows read their own history and their source's keys (bench --spread), where both builds have
  # the option: made up, every row would read row 0's.
  spreads=1
  for bin in kiln-baseline kiln; do $K/$bin bench --help 2>&1 | grep -q -- --spread || spreads=0; done
  for m in $models; do
    for rows in 1 128; do
      slots=$((rows == 1 ? 1 : 32))
      sizes=(--sizes "rows=$rows,slots=$slots,banned=8,memory=48,cache=96")
      [ $spreads = 1 ] && sizes+=(--spread "cache_rows=$rows,cross_rows=$slots")
      for bin in kiln-baseline kiln kiln-baseline kiln; do
        echo "$m $bin rows $rows: $(timeout 60 $K/$bin bench "/tmp/$m.bundle" --graph decoder_topk "${sizes[@]}" "${values[@]}" 2>&1 |
          grep -E '^ +1 ')"
      done
    done
    for bin in kiln-baseline kiln kiln-baseline kiln; do
      beam=$(timeout 60 $K/$bin eval "/tmp/$m.bundle" --source /tmp/beam.txt --target /tmp/beam.txt --beams 4 --batch 32 \
        --max-new-tokens 64 --min-new-tokens 64 --warmup 256 --json 2>/dev/null | tail -1)
      greedy=$(timeout 60 $K/$bin eval "/tmp/$m.bundle" --source /tmp/greedy.txt --target /tmp/greedy.txt --beams 1 \
        --batch 1 --max-new-tokens 64 --min-new-tokens 64 --warmup 24 --json 2>/dev/null | tail -1)
      python3 -c 'import json, sys
b, g = (json.loads(x)["tokens_per_s"] for x in sys.argv[3:5])
print(f"{sys.argv[1]} {sys.argv[2]}: beam 4 batch 32 {b:.0f} tokens/s, greedy {1000 / g:.4f} ms/token")' \
        "$m" "$bin" "$beam" "$greedy" || echo "$m $bin: eval failed"
    done
  done 2>&1 | tee "$OUT/ab.txt"
  unset KILN_TIMING_CACHE
fi
if [ "${PEERS:-1}" = 1 ]; then
  for m in $models; do
    echo "== $m against transformers"
    timeout 400 python3 scripts/device/seq2seq_speed.py $K/kiln "$(dirname "$data")" "$OUT" "$m" 2>&1 |
      tee "$OUT/$m-speed.log" | grep -E "^$m"
  done
fi
