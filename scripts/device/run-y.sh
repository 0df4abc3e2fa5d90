#!/usr/bin/env bash
# On a GPU machine, from the repository root, with STAGE made by `ULTRALYTICS=... pack.sh STAGE y`:
# the GPU tests (yolov10's parity against Ultralytics in fp32 and fp16 among them), the op harness
# on CUDA, then kiln against Ultralytics' PyTorch model in the same run (yolov10_speed.py). Results
# go to OUT. TESTS=0 skips the tests; SIZES="n s m" picks the sizes timed, MODES
# (eager,graph,compile) the PyTorch peers.
#   scripts/device/run-y.sh STAGE OUT
set -uo pipefail
stage=${1:?usage: run-y.sh STAGE OUT}
OUT=${2:?usage: run-y.sh STAGE OUT}
mkdir -p /tmp/k "$OUT"
tar -xJf "$stage/kiln.tar.xz" -C /tmp/k
# cuDNN 9 comes with PyTorch there; kiln opens it when it is on the library path.
cudnn=$(python3 -c 'import nvidia.cudnn; print(nvidia.cudnn.__path__[0])' 2>/dev/null)/lib
export LD_LIBRARY_PATH=/tmp/k/lib:/usr/local/cuda/lib64:$cudnn KILN_TEST_DATA=$stage/data KILN_PROGRESS=0 \
  PYTHONUNBUFFERED=1 YOLO_CONFIG_DIR=/tmp/yolo-config
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c 'import torch; print("torch", torch.__version__)'; } | tee "$OUT/env.txt"
if [ "${TESTS:-1}" = 1 ]; then
  echo "== GPU tests"
  # Not the tests that read the EfficientNet and encoder-decoder data of stages a and s.
  other_data='CudaSeq2Seq.*:CudaEngine.B0CheckpointMatchesCpuOnReferenceInputs:CudaEngine.BatchesAgreeWithSingleImages'
  other_data+=':CudaFp8.CalibratedB0AgreesWithCpuEmulationOnReferenceInputs'
  { timeout 200 /tmp/k/bin/kiln_gpu_tests --gtest_filter="-$other_data"; timeout 200 /tmp/k/bin/yolov10_gpu_tests; } 2>&1 |
    tee "$OUT/gpu_tests.log" | grep -E '^\[  |Failure|Expected|Which|actual|cuda fp' | tail -40
  echo "== op harness on CUDA"
  timeout 200 /tmp/k/bin/kiln_op_harness --backend cuda 2>&1 | tee "$OUT/op_harness.log" | tail -6
fi
echo "== speed"
timeout 400 python3 scripts/device/yolov10_speed.py /tmp/k/bin/kiln "$stage" "$stage/data/data" "$OUT" ${SIZES:-n s m} 2>&1 |
  tee "$OUT/speed.log" | grep -v -i warn | grep -E "^yolov10|^kiln|^Ultra|Error" | tail -40
