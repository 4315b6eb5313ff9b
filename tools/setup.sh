#!/usr/bin/env bash
# setup.sh — install what is missing (Debian), build, then run the default scenario or the tests.
#   bash tools/setup.sh run    install + build + simrun scenarios/seed-4096.json
#   bash tools/setup.sh test   install + build (normal, warnings as errors; Release and Debug tools; ASan/UBSan)
#                              + every ctest test in the normal and sanitized builds,
#                              then a short libFuzzer smoke of every harness (clang, tests/fuzz/)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-run}

pkgs="build-essential cmake pkg-config git libsimgrid-dev libcjson-dev libgsl-dev libcmocka-dev
      libopenmpi-dev openmpi-bin gnuplot-nox clang libclang-rt-14-dev libsqlite3-dev sqlite3"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

jobs=$(nproc)
# warnings are errors in CI and development builds only (MOESIM_WERROR), never in a user's build
werror=OFF
[ "$what" = test ] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOESIM_WERROR=$werror >/dev/null
cmake --build build -j"$jobs"

case "$what" in
  run)
    ./build/tools/simrun scenarios/seed-4096.json --out results/seed-4096
    ;;
  test)
    # OpenMPI refuses to run as root unless told; CI runs as root.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    ctest --test-dir build --output-on-failure -j"$jobs"
    # every build type builds: Release and Debug (the tools and the libraries they link, -Werror; the
    # optimizer's and the unoptimized build's warnings differ) beside RelWithDebInfo above
    for type in Release Debug; do
      cmake -S . -B "build-$type" -DCMAKE_BUILD_TYPE=$type -DMOESIM_WERROR=ON -DMOESIM_CUDA=OFF >/dev/null
      cmake --build "build-$type" -j"$jobs" --target simrun simdiag simcal
    done
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMOESIM_SANITIZE=ON -DMOESIM_CUDA=OFF -DMOESIM_WERROR=ON >/dev/null
    cmake --build build-asan -j"$jobs"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE slow
    # every input format under libFuzzer for MOESIM_FUZZ_SMOKE_SECONDS each (tests/fuzz/README.md)
    CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOESIM_FUZZ=ON \
      -DMOESIM_CUDA=OFF >/dev/null
    cmake --build build-fuzz -j"$jobs" --target fuzz-smoke
    ;;
  *) echo "usage: tools/setup.sh run|test" >&2; exit 2 ;;
esac
