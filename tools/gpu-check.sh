#!/usr/bin/env bash
# gpu-check.sh — the device checks, in one run on a machine with an NVIDIA GPU (H100/H200):
#   1. build with CUDA every target the checks use, and run the CPU references' tests (no GPU needed);
#   2. every CUDA kernel against its CPU reference (tests/test_gpu_kernels.c);
#   3. calibration: time the CUDA kernels (simcal bench, CUDA events) and fit a model from the trace,
#      on the published model of the GPU measured; then the host side of a training step (simcal
#      probe-host: host time per kernel launch, CUDA-graph launch and cuBLAS call, GPU time per tiny
#      kernel, device-to-host sync round trips) and a dense BF16 GEMM table, written as its own file and
#      as a calibration trace, fitted on the same base (steps host-probe and gemm-fit; independent of
#      the others: a failure is logged and the script goes on);
#   (and tools/host_probe_torch.py: PyTorch's per-call host costs and sustained GEMM clocks, when torch is installed);
#   4. live mode on the GPU: the NCCL backend runs a 1-GPU MoE step with the CUDA kernels
#      (tests/data/live/gpu-1.json: MoE output checked against the CPU reference), its trace next to
#      the simulated one (simdiag compare: stand-in kernels, so large errors are expected there).
# Outputs under $OUT (default ./gpu-out): one log per step, the calibration trace and model, the
# host-probe file (host-probe-<device>.json), the GEMM trace and its model (gpu-gemm-<device>.json,
# gpu-gemm-<device>-model.json), the live and simulated traces, and summary.txt (one line per step).
# Exit 0 when every step passed; without a GPU it stops after step 1 with exit 1, so that the build
# and the CPU side can be checked anywhere.
# Afterwards commit the trace and model under calibration/traces/ and calibration/models/
# (`simcal check` then covers them in CI).
#   bash tools/gpu-check.sh            (about 4 minutes on one H200 with 16 cores)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
FAILS=0
: >"$OUT/summary.txt"
step() {   # NAME CMD...: run, log to $OUT/NAME.log, record the outcome
    local name=$1
    shift
    echo "== $name: $*"
    if "$@" >"$OUT/$name.log" 2>&1; then
        echo "ok   $name" | tee -a "$OUT/summary.txt"
    else
        echo "FAIL $name (exit $?; $OUT/$name.log)" | tee -a "$OUT/summary.txt"
        tail -20 "$OUT/$name.log"
        FAILS=$((FAILS + 1))
    fi
}

# ---- 1. build and the CPU references --------------------------------------------------------------
build() {   # with the CUDA kernels (moesim_cuda) and the NCCL live backend, or it is no GPU build
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DMOESIM_WERROR=OFF &&
        cmake --build build-gpu -j"$(nproc)" --target test_gpu_kernels test_kernels_cpu simcal simrun simlive simdiag &&
        test -f build-gpu/libmoesim_cuda.a && grep -q MOESIM_LIVE_NCCL build-gpu/compile_commands.json
}
step build build
[ "$FAILS" -eq 0 ] || { echo "gpu-check: the build failed"; exit 1; }
step cpu-references ./build-gpu/tests/test_kernels_cpu

if ! nvidia-smi -L >"$OUT/devices.txt" 2>&1; then
    echo "gpu-check: no GPU (nvidia-smi -L failed): stopped before the GPU steps" | tee -a "$OUT/summary.txt"
    exit 1
fi
cat "$OUT/devices.txt"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
dev=$(echo "$name" | tr ' ' '-' | tr -cd 'A-Za-z0-9._-')
case "$name" in   # the published model of the GPU measured: the base of the fit
    *H200*) base=calibration/models/h200-published.json ;;
    *H100*) base=calibration/models/h100-published.json ;;
    *) base=calibration/models/h800-published.json ;;
esac

# ---- 2. every CUDA kernel against its CPU reference ------------------------------------------------
gpu_kernels() {   # passes, and did not skip for want of a GPU or of the CUDA build
    ./build-gpu/tests/test_gpu_kernels 2>&1 | tee "$OUT/gpu-kernels.out"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] && ! grep -q "no GPU: skipped\|built without moesim_cuda" "$OUT/gpu-kernels.out"
}
step gpu-kernels gpu_kernels

# ---- 3. calibration trace of the CUDA kernels and a model fitted from it -------------------------------
step bench ./build-gpu/tools/simcal bench --grid full --out "$OUT/gpu-$dev.json"
step fit ./build-gpu/tools/simcal fit "$OUT/gpu-$dev.json" --base "$base" --source "gpu-$dev" --device "$name" \
    --out "$OUT/gpu-$dev-model.json"
# host overheads and the dense GEMM table (about 15 s; its GEMM table stops at 60 s, the timeout
# guards the rest), then a GEMM model from the table alone
rm -f "$OUT/host-probe-$dev.json" "$OUT/gpu-gemm-$dev.json"
step host-probe timeout -k 10 120 ./build-gpu/tools/simcal probe-host --out "$OUT/host-probe-$dev.json" \
    --gemm-out "$OUT/gpu-gemm-$dev.json"
if [ -f "$OUT/gpu-gemm-$dev.json" ]; then
    step gemm-fit ./build-gpu/tools/simcal fit "$OUT/gpu-gemm-$dev.json" --base "$base" --source "gpu-gemm-$dev" \
        --device "$name" --out "$OUT/gpu-gemm-$dev-model.json"
fi

# the framework's side (PyTorch per-op host time, an autograd node, a module call, .item(); BF16 GEMMs
# sustained for 15 s against their first second): only where torch is installed, bounded by timeout
if python3 -c "import torch" >/dev/null 2>&1; then
    step torch-probe timeout -k 10 90 python3 tools/host_probe_torch.py --out "$OUT/torch-probe-$dev.json" --seconds 15
else
    echo "skip torch-probe (no torch)" | tee -a "$OUT/summary.txt"
fi

# ---- 4. live mode with the NCCL backend on one GPU, and the simulated step of the same scenario ------
launch=()
command -v mpirun >/dev/null && launch=(mpirun -np 1)   # else an MPI singleton
step live-nccl "${launch[@]}" ./build-gpu/tools/simlive tests/data/live/gpu-1.json --backend nccl \
    --out "$OUT/live-nccl" --watchdog-s 60
step simulated ./build-gpu/tools/simrun tests/data/live/gpu-1.json --out "$OUT/sim-gpu-1" --quiet
./build-gpu/tools/simdiag compare "$OUT/sim-gpu-1/trace.json" "$OUT/live-nccl/trace.json" \
    >"$OUT/compare.txt" 2>&1 || true

echo "gpu-check: outputs in $OUT ($FAILS failed step(s))"
[ "$FAILS" -eq 0 ]
