#!/usr/bin/env bash
# Packs what a run on the GPU machine needs into .carry/ (ignored by git, named in the device
# tool's `carry`): the kiln binaries, the shared libraries they use that such a machine may
# lack (xz-compressed), and the data of one run. The GPU machine has no ../shared.
#   scripts/device/pack.sh a   # GPU tests, speed vs peers, parity: checkpoint + timm reference,
#                              # 24 calibration images (GPU FP8 test), FP8 bundles calibrated here
#   scripts/device/pack.sh b   # accuracy: validation shards, CPU fp32 reference logits, the FP8
#                              # bundles (GPU FP8 against fp32 and against the CPU's FP8 emulation)
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
    calib=$out/shared/data/imagenet-calib-500
    mkdir -p "$calib"
    head -24 "$shared/data/imagenet-calib-500/labels.tsv" > "$calib/labels.tsv"
    cut -f1 "$calib/labels.tsv" | while read -r f; do cp "$shared/data/imagenet-calib-500/$f" "$calib/"; done
    mkdir -p "$out/bundles"
    for r in ${FP8_RECIPES:-fp8-pointwise fp8-e4m3-expanded fp8-project}; do
      [ -f "$out/bundles/b0-$r.bundle" ] || build/bin/kiln build "$shared/checkpoints/efficientnet_b0.tfhub-transplant" \
        -o "$out/bundles/b0-$r.bundle" --precision fp8 --recipe "$r" --calib "$shared/data/imagenet-calib-500"
    done
    ;;
  b)
    mkdir -p "$out/val" "$out/bundles"
    cp "$shared"/data/imagenet-val-1300/*.tar "$out/val/"
    for r in ${FP8_RECIPES:-fp8-pointwise fp8-e4m3-expanded}; do
      [ -f "$out/bundles/b0-$r.bundle" ] || build/bin/kiln build "$shared/checkpoints/efficientnet_b0.tfhub-transplant" \
        -o "$out/bundles/b0-$r.bundle" --precision fp8 --recipe "$r" --calib "$shared/data/imagenet-calib-500"
    done
    [ -f "$out/cpu_fp32_logits.safetensors" ] || build/bin/kiln eval build/example.bundle --device cpu \
      --data "$shared/data/imagenet-val-1300" --save-logits "$out/cpu_fp32_logits.safetensors" --json
    ;;
esac
du -sh "$out"
