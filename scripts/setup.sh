#!/usr/bin/env bash
# Installs the Debian packages shardsim builds with, only those that are missing.
# Used by `make run`, `make test` and `make bench`; safe to run again.
# `setup.sh fuzz` installs what `make fuzz` needs as well: clang and libFuzzer's runtime.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libsimgrid-dev        # network and host models (flow-level sharing of links)
  libboost-graph-dev    # the step DAG and its topological sort
  libyaml-cpp-dev       # scenario and topology files
  libfmt-dev            # formatting
  nlohmann-json3-dev    # JSON output, graph export, reading traces
  zlib1g-dev            # gzipped profiler traces (.json.gz) for compare
  doctest-dev           # unit tests
  libopenmpi-dev openmpi-bin  # CPU replay ranks (validation/), sweeps across machines (mpirun -n K)
  libexpat1-dev         # tests: the sweep's SVG pictures are parsed as XML
)
if [ "${1:-}" = "fuzz" ]; then
  packages+=(clang-14 libclang-rt-14-dev)  # libFuzzer (tests/fuzz)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
