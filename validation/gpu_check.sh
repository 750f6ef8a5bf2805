#!/usr/bin/env bash
# The GPU check, in one call, on a machine with one NVIDIA GPU (an H200 in the plan):
#   1. builds shardsim and the CUDA/NCCL harness (cmake --preset cuda), unless already built;
#   2. microbenchmarks GEMMs (the schedule's shapes and Llama 3.1 8B's, bf16 and float8), attention
#      and HBM copies;
#   3. fits them: validation/calibrations/h200.yaml (CALIBRATION=... to name it otherwise);
#   4. replays the world-size-1 Llama-layer schedule (validation/scenarios/llama_layers_h200.yaml)
#      through cuBLAS and NCCL, and simulates it without and with the calibration;
#   5. compares: validation/results/h200/compare*.{txt,json,svg};
#   6. the same with float8 tensorwise linears (cuBLASLt e4m3 GEMMs): validation/results/h200/float8/;
#   7. times the GEMMs of the published float8 cases P1, P2 and F1 in bf16 and float8:
#      validation/results/h200/published/.
# Everything it measures lands in validation/results/h200/ (and in $OUT when set, as the device
# runner collects it). One GPU cannot run multi-rank NCCL (NCCL before 2.30 rejects two ranks on
# one device), so collectives are not calibrated here: run shardsim-bench with --nprocs 8 on an
# 8-GPU node for that (validation/README.md).
#
#   validation/gpu_check.sh            # about 5 minutes on 16 cores, most of it the build
set -euo pipefail
cd "$(dirname "$0")/.."
results=validation/results/h200
calibration=${CALIBRATION:-validation/calibrations/h200.yaml}
scenario=validation/scenarios/llama_layers_h200.yaml
build=build/cuda
log() { printf '\n== %s\n' "$*"; }
# What was measured reaches $OUT (the device runner's folder) even when a step fails, so a failed
# run still brings back its logs and the measurements before the failure.
copy_out() {
  if [ -n "${OUT:-}" ]; then
    # One archive: the device runner brings back at most 8 files.
    mkdir -p "$OUT"
    tar czf "$OUT/gpu_check.tar.gz" "$results" "$calibration" 2>/dev/null || true
  fi
}
trap copy_out EXIT
trap "exit 124" TERM INT

log "device"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
mkdir -p "$results" "$(dirname "$calibration")"
nvidia-smi -q > "$results/nvidia-smi.txt" 2>&1 || true

log "build (cmake --preset cuda)"
if [ ! -x "$build/validation/shardsim-replay" ] || ! "$build/validation/shardsim-replay" --help >/dev/null 2>&1; then
  cmake --preset cuda > "$results/cmake-configure.log"
  grep -q "CUDA/NCCL replay backend" "$results/cmake-configure.log" || { cat "$results/cmake-configure.log"; echo "gpu_check: CUDA or NCCL not found"; exit 1; }
  cmake --build --preset cuda -j "$(nproc)" --target shardsim shardsim-replay shardsim-bench > "$results/cmake-build.log"
fi
shardsim=$build/sim/shardsim
replay=$build/validation/shardsim-replay
bench=$build/validation/shardsim-bench

log "export the schedule"
"$shardsim" export "$scenario" --out "$results/graph.json"

log "microbenchmarks: the schedule's GEMM shapes, attention and HBM copies"
"$bench" --backend nccl --graph "$results/graph.json" --only gemm,attention,memory --min-copy 1MiB --max-copy 4GiB \
  --warmup 5 --iters 20 --timeout 300 --out "$results/bench_schedule.json" | tee "$results/bench_schedule.txt"
log "microbenchmarks: Llama 3.1 8B GEMM shapes (and one rank's under TP 8), bf16 and float8"
"$bench" --backend nccl --only gemm --fp8 --warmup 5 --iters 20 --timeout 300 --out "$results/bench_llama8b.json" | tee "$results/bench_llama8b.txt"

log "calibrate"
# --topology: each GEMM beside the nominal model, and the float8 speed-up per shape beside the model's.
"$shardsim" calibrate "$results/bench_schedule.json" "$results/bench_llama8b.json" --topology validation/scenarios/h200_sxm_1x.yaml \
  --out "$calibration" | tee "$results/calibrate.txt"

log "replay the schedule on the GPU (cuBLAS + NCCL, world size 1)"
"$replay" --graph "$results/graph.json" --backend nccl --warmup 3 --timeout 300 --out "$results/measured" | tee "$results/replay.txt"

log "simulate, without and with the calibration"
"$shardsim" run "$scenario" --out "$results/simulated" > "$results/simulated.txt"
"$shardsim" run "$scenario" --set "calibration=$PWD/$calibration" --out "$results/calibrated" > "$results/calibrated.txt"

log "compare"
"$shardsim" compare "$results/simulated/timeline.json" "$results/measured/timeline.json" --svg "$results/compare_uncalibrated.svg" \
  | tee "$results/compare_uncalibrated.txt"
"$shardsim" compare "$results/calibrated/timeline.json" "$results/measured/timeline.json" --out "$results" | tee "$results/compare_calibrated.txt"

log "the same schedule with float8 tensorwise linears: replay, simulate with the calibration, compare"
f8=(--set training.float8.recipe=tensorwise)
mkdir -p "$results/float8"
"$shardsim" export "$scenario" "${f8[@]}" --out "$results/float8/graph.json"
"$replay" --graph "$results/float8/graph.json" --backend nccl --warmup 3 --timeout 300 --out "$results/float8/measured" \
  | tee "$results/float8/replay.txt"
"$shardsim" run "$scenario" "${f8[@]}" --out "$results/float8/simulated" > "$results/float8/simulated.txt"
"$shardsim" run "$scenario" "${f8[@]}" --set "calibration=$PWD/$calibration" --out "$results/float8/calibrated" \
  > "$results/float8/calibrated.txt"
"$shardsim" compare "$results/float8/simulated/timeline.json" "$results/float8/measured/timeline.json" \
  | tee "$results/float8/compare_uncalibrated.txt"
"$shardsim" compare "$results/float8/calibrated/timeline.json" "$results/float8/measured/timeline.json" --out "$results/float8" \
  | tee "$results/float8/compare_calibrated.txt"

log "the GEMMs of the published float8 cases (P1 70B and P2 8B at TP 8, F1 8B without TP): bf16, float8 fast and precise"
mkdir -p "$results/published"
for c in p1_llama3-70b_256xh100_tp8 p2_llama3-8b_64xh100_tp8 f1_llama3-8b_8xh100_bf16; do
  "$shardsim" export "validation/published/$c.yaml" --out "$results/published/$c.graph.json" > /dev/null
  "$bench" --backend nccl --graph "$results/published/$c.graph.json" --only gemm --fp8 --warmup 5 --iters 20 --timeout 300 \
    --out "$results/published/$c.json" | tee "$results/published/$c.txt"
  rm "$results/published/$c.graph.json"
done
# Measured against the H100 topology those cases run on (same Hopper SM; the H200's clocks are the H100's).
"$shardsim" calibrate "$results"/published/*.json --topology topologies/h100_sxm_8x_ib400.yaml \
  --out "$results/published/calibration.yaml" | tee "$results/published/calibrate.txt"

log "done: $results, $calibration"
