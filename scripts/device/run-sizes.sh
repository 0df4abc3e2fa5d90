#!/usr/bin/env bash
# On a GPU machine, from the repository root, with STAGE made by `pack.sh STAGE a`: EfficientNet
# sizes beyond b0, each at timm's default resolution, on random weights (speed does not depend on
# them): timm parity (bench/parity/timm_parity.py, which writes the checkpoints), kiln build fp16
# with planning (timed), kiln bench with the per-layer profile, and torch.compile reduce-overhead
# on the same checkpoint and batches (PEERS=0 skips it). Results go to OUT.
#   ARCHS="efficientnet_b3 efficientnet_b4" BATCH=1,32 scripts/device/run-sizes.sh STAGE OUT
set -uo pipefail
stage=${1:?usage: run-sizes.sh STAGE OUT}
OUT=${2:?usage: run-sizes.sh STAGE OUT}
mkdir -p /tmp/k "$OUT"
rm -f "$OUT"/sizes_*.jsonl  # one run's rows per folder
[ -x /tmp/k/bin/kiln ] || tar -xJf "$stage/kiln.tar.xz" -C /tmp/k
# cuDNN 9 comes with PyTorch there; kiln opens it when it is on the library path.
cudnn=$(python3 -c 'import nvidia.cudnn; print(nvidia.cudnn.__path__[0])' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/tmp/k/lib:/usr/local/cuda/lib64:$cudnn KILN_PROGRESS=0
K=/tmp/k/bin/kiln
archs=${ARCHS:-efficientnet_b1 efficientnet_b2 efficientnet_b3 efficientnet_b4}
batch=${BATCH:-1,32}
echo "== parity"
timeout 300 python3 bench/parity/timm_parity.py --kiln $K --work /tmp/sizes --archs "${archs// /,}" |
  tee "$OUT/sizes_parity.jsonl"
for arch in $archs; do
  d=/tmp/sizes/$arch
  echo "== $arch"
  start=$(date +%s%N)
  if ! $K build "$d" -o "$d/planned-fp16.bundle" --precision fp16 --batch "$batch" >/dev/null; then
    echo "$arch: kiln build failed" >&2
    continue
  fi
  echo "{\"arch\": \"$arch\", \"build_ms\": $((($(date +%s%N) - start) / 1000000))}" | tee -a "$OUT/sizes_build.jsonl"
  timeout 120 $K bench "$d/planned-fp16.bundle" --batch "$batch" --iters 100 --warmup 300 --json --profile --plan |
    sed "s|^|{\"arch\": \"$arch\", \"run\": |; s|$|}|" >> "$OUT/sizes_kiln.jsonl"
  if [ "${PEERS:-1}" = 1 ]; then
    timeout 300 python3 bench/peers/torch_peers.py --checkpoint "$d" --modes compile --batch "$batch" 2>>"$OUT/peers.err" |
      sed "s|^|{\"arch\": \"$arch\", \"run\": |; s|$|}|" >> "$OUT/sizes_peers.jsonl"
  fi
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
peer = {}
try:
    for line in open(f"{out}/sizes_peers.jsonl"):
        j = json.loads(line)
        peer[(j["arch"], j["run"]["batch"])] = j["run"]["median_ms"]
except FileNotFoundError:
    pass
for line in open(f"{out}/sizes_kiln.jsonl"):
    j = json.loads(line)
    r = j["run"]
    p = peer.get((j["arch"], r["batch"]))
    ratio = f"{p / r['median_ms']:.2f}x" if p else "-"
    print(f"{j['arch']:18} batch {r['batch']:4} kiln {r['median_ms']:7.3f} ms  torch.compile {p or 0:7.3f} ms  {ratio}")
PY
