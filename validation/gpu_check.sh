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
#      validation/results/h200/published/;
#   8. where python3 has torch and torchao, times two compiled Llama 3 8B blocks in bf16 and
#      torchao's float8 recipes and compares them with shardsim: validation/results/h200/block/.
# Steps 2, 4, 6, 7 and 8 measure (the GPU); the rest analyses what they measured. `--analyze` redoes
# the analysis alone on this machine, from the measurements already in validation/results/h200/
# (after a change to the model, say), with build/release's shardsim (SHARDSIM=... to name another).
# Everything it measures lands in validation/results/h200/ (and in $OUT when set, as the device
# runner collects it). One GPU cannot run multi-rank NCCL (NCCL before 2.30 rejects two ranks on
# one device), so collectives are not calibrated here: run shardsim-bench with --nprocs 8 on an
# 8-GPU node for that (validation/README.md).
#
#   validation/gpu_check.sh            # about 5 minutes on 16 cores, most of it the build
#   validation/gpu_check.sh --analyze  # seconds, no GPU
set -euo pipefail
cd "$(dirname "$0")/.."
analyze_only=false
case "${1:-}" in
  "") ;;
  --analyze) analyze_only=true ;;
  *) echo "usage: validation/gpu_check.sh [--analyze]" >&2; exit 2 ;;
esac
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

measure() {
  log "device"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  nvidia-smi -q > "$results/nvidia-smi.txt" 2>&1 || true

  log "build (cmake --preset cuda)"
  if [ ! -x "$build/validation/shardsim-replay" ] || ! "$build/validation/shardsim-replay" --help >/dev/null 2>&1; then
    cmake --preset cuda > "$results/cmake-configure.log"
    grep -q "CUDA/NCCL replay backend" "$results/cmake-configure.log" || { cat "$results/cmake-configure.log"; echo "gpu_check: CUDA or NCCL not found"; exit 1; }
    cmake --build --preset cuda -j "$(nproc)" --target shardsim shardsim-replay shardsim-bench > "$results/cmake-build.log"
  fi
  local replay=$build/validation/shardsim-replay
  local bench=$build/validation/shardsim-bench

  log "export the schedule, with bf16 and with float8 tensorwise linears"
  "$shardsim" export "$scenario" --out "$results/graph.json"
  "$shardsim" export "$scenario" "${f8[@]}" --out "$results/float8/graph.json"

  log "microbenchmarks: the schedule's GEMM shapes, attention and HBM copies"
  "$bench" --backend nccl --graph "$results/graph.json" --only gemm,attention,memory --min-copy 1MiB --max-copy 4GiB \
    --warmup 5 --iters 20 --timeout 300 --out "$results/bench_schedule.json" | tee "$results/bench_schedule.txt"
  log "microbenchmarks: Llama 3.1 8B GEMM shapes (the reference block, and one rank's under TP 8), bf16 and float8"
  "$bench" --backend nccl --only gemm --fp8 --warmup 5 --iters 20 --timeout 300 --out "$results/bench_llama8b.json" | tee "$results/bench_llama8b.txt"

  log "the GEMMs of the published float8 cases (P1 70B and P2 8B at TP 8, F1 8B without TP): bf16, float8 fast and precise"
  for c in "${published[@]}"; do
    "$shardsim" export "validation/published/$c.yaml" --out "$results/published/$c.graph.json" > /dev/null
    "$bench" --backend nccl --graph "$results/published/$c.graph.json" --only gemm --fp8 --warmup 5 --iters 20 --timeout 300 \
      --out "$results/published/$c.json" | tee "$results/published/$c.txt"
    rm "$results/published/$c.graph.json"
  done

  log "two compiled Llama 3 8B blocks in PyTorch, bf16 and torchao's float8 recipes (needs torch and torchao)"
  # block/: SDPA's own choice of attention (cuDNN on Hopper from torch 2.11); block_flash/:
  # FlashAttention-2 alone, what the published runs' torch ran.
  if python3 -c "import torch, torchao.float8" > /dev/null 2>&1; then
    for b in block:default block_flash:flash; do
      local dir=$results/${b%%:*}
      python3 validation/torch/float8_block.py --attention "${b#*:}" --out "$dir/measured.json" --profile "$dir" | tee "$dir/measured.txt"
      gzip -f "$dir"/trace_*.json
    done
  else
    echo "skipped: python3 cannot import torch and torchao.float8" | tee "$results/block/measured.txt"
  fi

  log "replay the schedules on the GPU (cuBLAS + NCCL, world size 1): bf16, then float8 linears"
  "$replay" --graph "$results/graph.json" --backend nccl --warmup 3 --timeout 300 --out "$results/measured" | tee "$results/replay.txt"
  "$replay" --graph "$results/float8/graph.json" --backend nccl --warmup 3 --timeout 300 --out "$results/float8/measured" \
    | tee "$results/float8/replay.txt"
}

# Simulates the PyTorch blocks in bf16, tensorwise and rowwise (llama_block_h200.yaml) into
# DIR/PREFIXRECIPE with ATTENTION's kernel and the extra --set options, and compares them with
# DIR/measured.json into DIR/COMPARE.
simulate_blocks() {
  local dir=$1 prefix=$2 compare=$3 attention=$4
  shift 4
  local timelines=()
  for r in bf16 tensorwise rowwise; do
    local extra=(--set "training.attention=$attention" "$@")
    [ "$r" != bf16 ] && extra+=(--set "training.float8.recipe=$r")
    "$shardsim" run validation/scenarios/llama_block_h200.yaml "${extra[@]}" --out "$dir/$prefix$r" > "$dir/$prefix$r.txt"
    timelines+=("$r=$dir/$prefix$r/timeline.json")
  done
  python3 validation/torch/compare_block.py "$dir/measured.json" "${timelines[@]}" | tee "$dir/$compare"
}

analyze_block() {
  local dir=$1 attention=$2
  [ -f "$dir/measured.json" ] || return 0
  log "the PyTorch blocks ($dir) as shardsim predicts them (validation/scenarios/llama_block_h200.yaml, $attention attention)"
  simulate_blocks "$dir" "" compare.txt "$attention"
  if [ -f "$dir/trace_bf16.json.gz" ] && [ -f "$dir/trace_tensorwise.json.gz" ]; then
    log "the same with the GEMM and attention rates of the blocks' own profiler traces"
    # Unpacked beside the archives (a fixed path, so that the files citing it do not change).
    local traces=$dir/traces
    mkdir -p "$traces"
    for r in bf16 tensorwise; do gunzip -c "$dir/trace_$r.json.gz" > "$traces/trace_$r.json"; done
    "$shardsim" calibrate "$traces/trace_bf16.json" "$traces/trace_tensorwise.json" --out "$dir/calibration.yaml" \
      > "$dir/calibrate.txt"
    rm -r "$traces"
    simulate_blocks "$dir" calibrated_ compare_calibrated.txt "$attention" --set "calibration=$PWD/$dir/calibration.yaml"
  fi
}

analyze() {
  log "calibrate"
  # --topology: each GEMM beside the nominal model, the float8 speed-up per shape beside the
  # model's, and the reference block's float8 fractions.
  "$shardsim" calibrate "$results/bench_schedule.json" "$results/bench_llama8b.json" --topology validation/scenarios/h200_sxm_1x.yaml \
    --out "$calibration" | tee "$results/calibrate.txt"
  # The published cases' GEMMs against the H100 topology they ran on (the same Hopper SM and clocks).
  local benches=()
  for c in "${published[@]}"; do benches+=("$results/published/$c.json"); done
  "$shardsim" calibrate "${benches[@]}" --topology topologies/h100_sxm_8x_ib400.yaml \
    --out "$results/published/calibration.yaml" | tee "$results/published/calibrate.txt"

  # The PyTorch blocks: block/ ran the attention SDPA picked (cuDNN on Hopper from torch 2.11),
  # block_flash/ FlashAttention-2; the scenario prices the same kernel.
  for b in block:cudnn block_flash:flash; do
    analyze_block "$results/${b%%:*}" "${b#*:}"
  done

  for d in "" float8; do
    local out=$results${d:+/$d}
    local extra=()
    [ -n "$d" ] && extra=("${f8[@]}")
    log "simulate ${d:-bf16}, without and with the calibration, and compare with the replay"
    "$shardsim" run "$scenario" "${extra[@]}" --out "$out/simulated" > "$out/simulated.txt"
    "$shardsim" run "$scenario" "${extra[@]}" --set "calibration=$PWD/$calibration" --out "$out/calibrated" > "$out/calibrated.txt"
    "$shardsim" compare "$out/simulated/timeline.json" "$out/measured/timeline.json" --svg "$out/compare_uncalibrated.svg" \
      | tee "$out/compare_uncalibrated.txt"
    "$shardsim" compare "$out/calibrated/timeline.json" "$out/measured/timeline.json" --out "$out" | tee "$out/compare_calibrated.txt"
  done
}

f8=(--set training.float8.recipe=tensorwise)
published=(p1_llama3-70b_256xh100_tp8 p2_llama3-8b_64xh100_tp8 f1_llama3-8b_8xh100_bf16)
mkdir -p "$results/float8" "$results/published" "$results/block" "$results/block_flash" "$(dirname "$calibration")"
if $analyze_only; then
  shardsim=${SHARDSIM:-build/release/sim/shardsim}
  [ -x "$shardsim" ] || { echo "gpu_check: no $shardsim (make build, or SHARDSIM=...)" >&2; exit 1; }
else
  shardsim=$build/sim/shardsim
  measure
fi
analyze
log "done: $results, $calibration"
