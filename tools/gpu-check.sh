#!/usr/bin/env bash
# gpu-check.sh — the device checks, in one run on a machine with an NVIDIA GPU (H100/H200).
# Builds with CUDA, runs the GPU-vs-CPU kernel tests, times the kernels for calibration and fits a
# model from the trace. Outputs go to $OUT (default ./gpu-out): test log, trace, model, bench table.
# Afterwards commit the trace and model under calibration/traces/ and calibration/models/
# (`simcal check` then covers them in CI).
#   bash tools/gpu-check.sh            (about 5 minutes on one H200)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
nvidia-smi -L | tee "$OUT/devices.txt" || { echo "gpu-check: no GPU"; exit 1; }
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9._-')
jobs=$(nproc)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DMOESIM_WERROR=OFF >"$OUT/cmake.log" 2>&1 \
  && cmake --build build-gpu -j"$jobs" --target test_gpu_kernels test_kernels_cpu simcal simrun >>"$OUT/cmake.log" 2>&1 \
  || { tail -30 "$OUT/cmake.log"; exit 1; }
# 1. GPU vs CPU references (every kernel), then the CPU references themselves
(./build-gpu/tests/test_gpu_kernels && ./build-gpu/tests/test_kernels_cpu) 2>&1 | tee "$OUT/gpu-tests.log"
# 2. calibration trace of the CUDA kernels (CUDA events), and a model fitted from it
./build-gpu/tools/simcal bench --grid full --out "$OUT/gpu-$dev.json" 2>&1 | tee "$OUT/bench.txt"
./build-gpu/tools/simcal fit "$OUT/gpu-$dev.json" --base calibration/models/h800-published.json \
  --source "gpu-$dev" --out "$OUT/gpu-$dev-model.json" 2>&1 | tee -a "$OUT/bench.txt"
echo "gpu-check: outputs in $OUT"
