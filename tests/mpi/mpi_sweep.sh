#!/usr/bin/env bash
# The same 12-point sweep locally (-j 2) and under `mpirun -n 2` (-j 1 per rank) must write
# byte-identical results.csv and results.jsonl, with both ranks running points; run again under
# mpirun it must find every point done. Exit 77 (CTest: skipped) without mpirun or MPI support.
# usage: mpi_sweep.sh SHARDSIM SOURCE_DIR WORK_DIR
set -euo pipefail
shardsim=$1 src=$2 work=$3
if ! command -v mpirun > /dev/null; then
  echo "mpirun not found (Debian: openmpi-bin): skipped"
  exit 77
fi
# OpenMPI refuses to run as root without these; CI containers run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$work"
mkdir -p "$work"
args=(sweep "$src/tests/data/tiny_llama.yaml" --set 'fsdp.wrap={policy: module}' --grid fsdp.backward_prefetch=pre,post,none
      --grid fsdp.wrap.blocks_per_unit=1,2 --grid training.micro_batch=1,2)

"$shardsim" "${args[@]}" -j 2 --out "$work/local" > "$work/local.log" 2>&1 || { cat "$work/local.log"; exit 1; }
# --oversubscribe: two ranks may exceed the slots OpenMPI counts on a 2-core machine.
# OpenMPI's own allocations (MCA plugins, ompi_op_base_op_select) are never freed, which the
# sanitizer build's LeakSanitizer reports at exit: leak checks stay on for the local run above.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
if ! mpirun --oversubscribe -n 2 "$shardsim" "${args[@]}" -j 1 --out "$work/mpi" > "$work/mpi.log" 2>&1; then
  if grep -q "built without MPI" "$work/mpi.log"; then
    echo "shardsim was built without MPI: skipped"
    exit 77
  fi
  cat "$work/mpi.log"
  exit 1
fi
cat "$work/mpi.log"
cmp "$work/local/results.csv" "$work/mpi/results.csv"
cmp "$work/local/results.jsonl" "$work/mpi/results.jsonl"
grep -qE "12 points \(12 run now, 0 from earlier runs\).*2 MPI ranks x -j 1 \(points per rank: [1-9][0-9]*, [1-9][0-9]*\)" "$work/mpi.log" ||
  { echo "expected both ranks to run points"; exit 1; }

mpirun --oversubscribe -n 2 "$shardsim" "${args[@]}" -j 1 --out "$work/mpi" > "$work/again.log" 2>&1 || { cat "$work/again.log"; exit 1; }
grep -q "sweep: 0 points to run (12 already done)" "$work/again.log" || { cat "$work/again.log"; exit 1; }
cmp "$work/local/results.csv" "$work/mpi/results.csv"
echo "mpirun -n 2 and -j 2 wrote identical results"
