#!/usr/bin/env bash
# Packs what a run on a GPU machine needs into STAGE, a folder to copy there next to the
# repository: the kiln binaries, the shared libraries they use that such a machine may lack
# (xz-compressed; system-libs.txt lists those it has), and the data of one run (the GPU
# machine has no test data folder of its own).
#   scripts/device/pack.sh STAGE a   # GPU tests, op harness, speed against peers: the checkpoint, the
#                                    # timm reference inputs and logits, 24 calibration images
#   scripts/device/pack.sh STAGE b   # accuracy: held-out shards, CPU fp32 reference logits, fp16 and
#                                    # FP8 bundles (calibrated here on 500 images)
#   scripts/device/pack.sh STAGE s   # encoder-decoders (run-s.sh): the GPU tests and op harness, the seq2seq
#                                    # fixtures with transformers' references, the WMT22 text and
#                                    # kiln's token ids of it (check_tokenizers.py compares them there)
#   scripts/device/pack.sh STAGE t   # encoder-decoder timing only (run-s.sh): kiln, the fixtures'
#                                    # tokenizer files (seq2seq_speed.py builds random models of the
#                                    # real sizes with them) and WMT22's English side (1 MB)
#   scripts/device/pack.sh STAGE y   # detection: the GPU tests (yolov10's too) and op harness, the 128
#                                    # val2017 images; with ULTRALYTICS=DIR also that `ultralytics/`
#                                    # package (THU-MIG/yolov10's, run from source by the reference
#                                    # and speed scripts; it stays out of this repository)
# BASELINE=FILE adds another kiln binary (an earlier commit's build) as bin/kiln-baseline, to time
# against in the same run.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: pack.sh STAGE a|b}
run=${2:?usage: pack.sh STAGE a|b}
shared=${KILN_TEST_DATA:-../shared}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out" "$stage/bin" "$stage/lib"
bins=(build/bin/kiln)
[ "$run" = a ] || [ "$run" = s ] || [ "$run" = y ] && bins+=(build/tests/kiln_gpu_tests build/tests/kiln_op_harness)
[ "$run" = y ] && bins+=(build/yolov10_gpu_tests)
cp "${bins[@]}" "$stage/bin/"
[ -n "${BASELINE:-}" ] && cp "$BASELINE" "$stage/bin/kiln-baseline" && bins+=("$BASELINE")
strip "$stage"/bin/*
# Everything but glibc and what the GPU machine was seen to have (with its own libxml2 it also
# brings its own ICU).
ldd "${bins[@]}" | awk '/=>/ {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64)\.so|/libicu' |
  grep -vFf <(grep -v '^#' scripts/device/system-libs.txt | sed 's|^|/|') |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
# xz -9e: 40% smaller than tar -J (30 -> 19 MB with the test binaries), for a minute more.
tar -cf - -C "$stage" bin lib | xz -9e -T0 > "$out/kiln.tar.xz"
build() {  # build NAME ARGS...: a bundle made here, once
  local name=$1
  shift
  [ -f "$out/bundles/$name.bundle" ] || build/bin/kiln build "$@" -o "$out/bundles/$name.bundle" >/dev/null
}
ckpt=$shared/checkpoints/efficientnet_b0.tfhub-transplant
mkdir -p "$out/bundles"
case "$run" in
  a)
    mkdir -p "$out/data/checkpoints" "$out/data/reference"
    cp -r "$ckpt" "$out/data/checkpoints/"
    # The tensors the GPU tests read (the intermediate outputs stay behind).
    python3 - "$shared/reference/efficientnet_b0_timm_reference.safetensors" \
      "$out/data/reference/efficientnet_b0_timm_reference.safetensors" <<'PY'
import json, struct, sys
keep = ("inputs", "stress_inputs", "efficientnet_b0.logits", "efficientnet_b0.stress_logits")
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header, body = json.loads(data[8:8 + n]), data[8 + n:]
out, chunks, at = {}, [], 0
for name in keep:
    t = dict(header[name])
    begin, end = t["data_offsets"]
    chunks.append(body[begin:end])
    t["data_offsets"] = [at, at + end - begin]
    at += end - begin
    out[name] = t
text = json.dumps(out).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
PY
    calib=$out/data/data/imagenet-calib-500
    mkdir -p "$calib"
    head -24 "$shared/data/imagenet-calib-500/labels.tsv" > "$calib/labels.tsv"
    cut -f1 "$calib/labels.tsv" | while read -r f; do cp "$shared/data/imagenet-calib-500/$f" "$calib/"; done
    ;;
  b)
    for r in ${FP8_RECIPES:-fp8-pointwise fp8-e4m3-expanded}; do
      build "b0-$r" "$ckpt" --precision fp8 --recipe "$r" --calib "$shared/data/imagenet-calib-500"
    done
    mkdir -p "$out/val"
    cp "$shared"/data/imagenet-val-1300/*.tar "$out/val/"
    build b0-fp16 "$ckpt" --precision fp16
    # The CPU fp32 reference logits, stored as f16 to halve what is copied (EfficientNet's
    # logits are below 16, so rounding moves each by at most 0.004).
    if [ ! -f "$out/cpu_fp32_logits_f16.safetensors" ]; then
      build/bin/kiln build "$ckpt" -o "$stage/b0-fp32.bundle" >/dev/null
      build/bin/kiln eval "$stage/b0-fp32.bundle" --device cpu --data "$shared/data/imagenet-val-1300" \
        --save-logits "$stage/cpu_fp32_logits.safetensors" --json >/dev/null
      python3 - "$stage/cpu_fp32_logits.safetensors" "$out/cpu_fp32_logits_f16.safetensors" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header, body = json.loads(data[8:8 + n]), data[8 + n:]
out, chunks, at = {}, [], 0
for name, t in header.items():
    if name == "__metadata__":
        continue
    begin, end = t["data_offsets"]
    raw = body[begin:end]
    if name == "logits" and t["dtype"] == "F32":
        raw = struct.pack("<%de" % (len(raw) // 4), *struct.unpack("<%df" % (len(raw) // 4), raw))
        t = dict(t, dtype="F16")
    chunks.append(raw)
    out[name] = dict(t, data_offsets=[at, at + len(raw)])
    at += len(raw)
text = json.dumps(out).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
PY
    fi
    ;;
  s)
    mkdir -p "$out/data/checkpoints" "$out/data/reference" "$out/data/data/text" "$out/tokens"
    cp "$shared"/data/text/wmt22.* "$out/data/data/text/"
    for f in marian-tiny-en-de bart-tiny-lead; do
      cp -r "$shared/checkpoints/$f" "$out/data/checkpoints/"
      cp "$shared/reference/$f.reference.json" "$shared/reference/$f.reference.safetensors" "$out/data/reference/"
      build "$f" "$shared/checkpoints/$f"
      for text in "$shared"/data/text/wmt22.*; do
        name=$(basename "$text")
        build/bin/kiln tokenize "$out/bundles/$f.bundle" --input "$text" > "$out/tokens/$f.$name.source"
        build/bin/kiln tokenize "$out/bundles/$f.bundle" --input "$text" --target > "$out/tokens/$f.$name.target"
      done
    done
    rm -r "$out/bundles"  # the tests build their own there
    ;;
  t)
    mkdir -p "$out/data/checkpoints/marian-tiny-en-de" "$out/data/checkpoints/bart-tiny-lead" "$out/data/data/text"
    cp "$shared"/checkpoints/marian-tiny-en-de/{source.spm,target.spm,tokenizer_config.json,vocab.json} \
      "$out/data/checkpoints/marian-tiny-en-de/"
    cp "$shared"/checkpoints/bart-tiny-lead/{merges.txt,tokenizer_config.json,vocab.json} "$out/data/checkpoints/bart-tiny-lead/"
    cp "$shared/data/text/wmt22.en-de.en" "$out/data/data/text/"
    rm -r "$out/bundles"
    ;;
  y)
    mkdir -p "$out/data/data"
    cp -r "$shared/data/coco-val2017-128" "$out/data/data/"
    [ -n "${ULTRALYTICS:-}" ] && rm -rf "$out/ultralytics" && cp -r "$ULTRALYTICS" "$out/ultralytics"
    rm -r "$out/bundles"
    ;;
esac
du -sh "$out"
