#!/usr/bin/env bash
# Packs what a run on the GPU machine needs into .carry/ (ignored by git, named in the device
# tool's `carry`): the kiln binaries, the shared libraries they use that such a machine may
# lack (xz-compressed), and the data of one run. The GPU machine has no ../shared.
#   scripts/device/pack.sh a   # GPU tests, speed vs peers, parity: checkpoint + timm reference
#   scripts/device/pack.sh b   # accuracy: validation shards + CPU fp32 reference logits
set -euo pipefail
cd "$(dirname "$0")/../.."
run=${1:?usage: pack.sh a|b}
shared=${KILN_TEST_DATA:-../shared}
out=.carry/$run
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out" "$stage/bin" "$stage/lib"
bins=(build/bin/kiln)
[ "$run" = a ] && bins+=(build/tests/kiln_gpu_tests)
cp "${bins[@]}" "$stage/bin/"
strip "$stage"/bin/*
# Everything but glibc and what the GPU machine was seen to have (system-libs.txt; with its own
# libxml2 it also brings its own ICU).
ldd "${bins[@]}" | awk '/=>/ {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64)\.so|/libicu' |
  grep -vFf <(grep -v '^#' scripts/device/system-libs.txt | sed 's|^|/|') |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
tar -cJf "$out/kiln.tar.xz" -C "$stage" bin lib
case "$run" in
  a)
    mkdir -p "$out/shared/checkpoints" "$out/shared/reference"
    cp -r "$shared/checkpoints/efficientnet_b0.tfhub-transplant" "$out/shared/checkpoints/"
    cp "$shared/reference/efficientnet_b0_timm_reference.safetensors" "$out/shared/reference/"
    ;;
  b)
    mkdir -p "$out/val"
    cp "$shared"/data/imagenet-val-1300/*.tar "$out/val/"
    build/bin/kiln build "$shared/checkpoints/efficientnet_b0.tfhub-transplant" -o "$out/b0-fp16.bundle" --precision fp16 --batch 1,32,128
    [ -f "$out/cpu_fp32_logits.safetensors" ] || build/bin/kiln eval build/example.bundle --device cpu \
      --data "$shared/data/imagenet-val-1300" --save-logits "$out/cpu_fp32_logits.safetensors" --json
    ;;
esac
du -sh "$out"
