#!/usr/bin/env bash
# Configures, builds and tests kpmap against an installed Kokkos + Kokkos Kernels (a Spack or
# module install, or one built by hand): what to run before trusting kpmap's numbers on a new
# machine or a new Kokkos.
#   scripts/check_kokkos.sh KOKKOS_ROOT [PRESET] [KOKKOS_KERNELS_ROOT]
# PRESET: a configure preset of CMakePresets.json (default, debug, native, asan; default: default).
# KOKKOS_KERNELS_ROOT defaults to KOKKOS_ROOT (Spack installs them in separate prefixes: give both).
# The build goes to build/check-PRESET (KPMAP_CHECK_BUILD overrides it). Extra CMake arguments come
# from KPMAP_CMAKE_ARGS, e.g. for a CUDA Kokkos:
#   KPMAP_CMAKE_ARGS="-DCMAKE_CXX_COMPILER=$KOKKOS_ROOT/bin/nvcc_wrapper -DKPMAP_EXECUTION_SPACE=Cuda"
# Runs every test but label perf; exits with ctest's status, or 2 for bad arguments.
# Other dependencies (MPI, yaml-cpp, GoogleTest, ...) come from scripts/setup.sh or the site.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  sed -n '5,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ $# -ge 1 ] && [ $# -le 3 ] || usage
kokkos=$1
preset=${2:-default}
kernels=${3:-$kokkos}
find_config() {  # $1 prefix, $2 package: the prefix holds <lib or lib64>/cmake/<package>/<package>Config.cmake
  compgen -G "$1/lib*/cmake/$2/$2Config.cmake" >/dev/null || compgen -G "$1/lib*/cmake/$2/$2-config.cmake" >/dev/null
}
find_config "$kokkos" Kokkos || {
  echo "check_kokkos.sh: $kokkos holds no lib*/cmake/Kokkos/KokkosConfig.cmake (allowed: a Kokkos install prefix)" >&2
  exit 2
}
find_config "$kernels" KokkosKernels || {
  echo "check_kokkos.sh: $kernels holds no lib*/cmake/KokkosKernels/KokkosKernelsConfig.cmake" \
    "(allowed: a Kokkos Kernels install prefix; give it as the third argument when it is not KOKKOS_ROOT)" >&2
  exit 2
}
grep -q "\"name\": \"$preset\"" CMakePresets.json || {
  echo "check_kokkos.sh: preset '$preset' is not in CMakePresets.json (allowed: default, debug, native, asan)" >&2
  exit 2
}
build=${KPMAP_CHECK_BUILD:-build/check-$preset}
# shellcheck disable=SC2086  # KPMAP_CMAKE_ARGS is a list of arguments
cmake --preset "$preset" -B "$build" -DKokkos_ROOT="$kokkos" -DKokkosKernels_ROOT="$kernels" ${KPMAP_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"
"$build/kpmap" --version
ctest --test-dir "$build" -LE perf --output-on-failure
