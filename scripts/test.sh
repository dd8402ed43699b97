#!/usr/bin/env bash
# The test command: set up, configure, build, run every test.
#   scripts/test.sh            everything (GPU tests skip without a GPU)
# Environment:
#   RINGSERVE_BUILD_DIR        build folder (default: build)
#   RINGSERVE_CUDA             AUTO|ON|OFF (default AUTO)
#   RINGSERVE_CUDA_ARCHS       CUDA architectures (default 80;86;89;90; in CI: 90)
#   RINGSERVE_FUZZ_SECONDS     seconds per fuzz target (default 20)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/setup.sh

build=${RINGSERVE_BUILD_DIR:-build}
cuda=${RINGSERVE_CUDA:-AUTO}
archs=${RINGSERVE_CUDA_ARCHS:-}
if [[ -z $archs && -n ${CI:-} ]]; then
  archs=90  # one architecture keeps a 2-core CI run short
fi
jobs=$(nproc)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGSERVE_CUDA="$cuda" \
  ${archs:+-DCMAKE_CUDA_ARCHITECTURES="$archs"}
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900

# libFuzzer targets need clang; they run for a bounded time each.
if command -v clang++ >/dev/null 2>&1; then
  fuzz_build=${build}-fuzz
  cmake -S . -B "$fuzz_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DRINGSERVE_FUZZ=ON -DRINGSERVE_CUDA=OFF -DRINGSERVE_BUILD_TESTS=OFF \
    -DRINGSERVE_FUZZ_SECONDS="${RINGSERVE_FUZZ_SECONDS:-20}"
  cmake --build "$fuzz_build" -j "$jobs" --target ringserve_fuzzers
  ctest --test-dir "$fuzz_build" --output-on-failure -L fuzz
else
  echo "test.sh: clang++ not found, fuzz targets not built"
fi
