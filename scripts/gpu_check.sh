#!/usr/bin/env bash
# Runs a CUDA build of kpmap on a GPU machine that has no Kokkos, MPI or kpmap installed:
# pack the build and the shared libraries it needs on the build machine, carry the folder to the
# GPU machine, run the tests and the gradient benchmark there (docs/portability.md, "Running on
# GPUs"; the build is what ../shared/tools/kokkos4_check.sh kp_cuda makes).
#
#   [CUDA_LIB_DIR=DIR] scripts/gpu_check.sh pack BUILD_DIR DEST
#       on the build machine: DEST/payload.tar.xz holds the build folder without objects (its
#       programs stripped), every shared library they load except the C and C++ runtimes and the
#       CUDA driver (libcudart from CUDA_LIB_DIR, e.g. kokkos4_check.sh's $P/cuda12/lib), MPICH's
#       launcher and UCX's shared-memory module; DEST/build_dir its original path
#   scripts/gpu_check.sh run DEST OUT [ctest args]
#       on the GPU machine, from the repository root: unpacks the build at its original path,
#       points the tests at the carried MPI and this machine's python3 and cmake, runs
#       ctest -LE 'perf|install' but collectives_unsupported_element_type (those compile code,
#       which needs the build machine's compilers and build files), measures the device's copy bandwidth (PyTorch, when the machine has
#       it) and runs bench_gradient on the device; logs into OUT
set -euo pipefail
cmd=${1:?pack or run}
shift

if [ "$cmd" = pack ]; then
  build=$(cd "${1:?BUILD_DIR}" && pwd)
  dest=${2:?DEST}
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  rm -rf "$dest"
  mkdir -p "$dest" "$stage/carry/lib" "$stage/carry/bin" "$stage/carry/ucx" "$stage/root"
  printf '%s\n' "$build" > "$dest/build_dir"
  git rev-parse HEAD > "$dest/commit" 2>/dev/null || true
  # The build folder as the tests see it (programs, CTest files, generated data; no objects), its
  # programs stripped; they share most of their code, which xz's large window stores once.
  mkdir -p "$stage/root$build"
  tar -C "$build" -cf - --exclude='*.o' --exclude='*.a' --exclude='CMakeFiles' --exclude='.ninja_*' \
    --exclude='build.ninja' --exclude='compile_commands.json' . | tar -C "$stage/root$build" -xf -
  programs=$(find "$stage/root$build" -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q ELF' _ {} \; -print)
  # Every shared library the programs load, but the C/C++ runtimes and the CUDA driver.
  echo "$programs" | LD_LIBRARY_PATH="${CUDA_LIB_DIR:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" xargs ldd 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libstdc\+\+|libgcc_s|libcuda)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/carry/lib/"; done
  echo "$programs" | xargs strip
  cp /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy "$stage/carry/bin/"
  cp -L /usr/lib/x86_64-linux-gnu/ucx/libuct_cma.so.0 "$stage/carry/ucx/"
  tar -C "$stage" -cf - root carry | xz -T1 --lzma2=preset=6,dict=256MiB > "$dest/payload.tar.xz"
  du -sh "$dest"
  exit 0
fi

[ "$cmd" = run ] || { echo "gpu_check.sh: unknown command '$cmd' (pack or run)" >&2; exit 2; }
dest=$(cd "${1:?DEST}" && pwd)
out=${2:?OUT}
shift 2
mkdir -p "$out"
build=$(cat "$dest/build_dir")
# The build at its original path (the CTest files name the source and build folders by absolute
# path), the libraries and MPI's launcher under /tmp/kpmap-carry; python's tarfile, since the
# machine may have no xz.
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall("/tmp/kpmap-unpack")' "$dest/payload.tar.xz"
mkdir -p "$(dirname "$build")"
rm -rf "$build" /tmp/kpmap-carry
mv "/tmp/kpmap-unpack/root$build" "$build"
mv /tmp/kpmap-unpack/carry /tmp/kpmap-carry
carry=/tmp/kpmap-carry
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$carry/bin:$PATH"
export UCX_MODULE_DIR="$carry/ucx" OMP_NUM_THREADS=1 HYDRA_LAUNCHER=fork
src=$(sed -n 's/^# Source directory: //p' "$build/CTestTestfile.cmake")
if [ "$src" != "$(pwd)" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$(pwd)" "$src"; fi
python=$(sed -n 's/^_\?Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" | head -n 1)
mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
cmake=$(sed -n 's/^CMAKE_COMMAND:[A-Z]*=//p' "$build/CMakeCache.txt")
find "$build" -name CTestTestfile.cmake -exec sed -i -e "s#\"$python\"#\"$(command -v python3)\"#g" \
  -e "s#\"/usr/bin/python3\"#\"$(command -v python3)\"#g" -e "s#\"$cmake\"#\"$(command -v cmake)\"#g" \
  -e "s#\"$mpiexec\"#\"$carry/bin/mpiexec.hydra\"#g" {} +
{
  echo "commit $(cat "$dest/commit" 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
  nproc
} > "$out/machine.txt" 2>&1
(cd "$build" && timeout 300 ctest -LE 'perf|install' -E '^collectives_unsupported_element_type$' -j 12 \
  --timeout 120 --output-on-failure "$@") > "$out/ctest.log" 2>&1 || true
tail -n 40 "$out/ctest.log"
# The device's copy bandwidth (bytes read + written per second, device to device), for reference.
python3 - > "$out/copy_bandwidth.txt" 2>&1 <<'EOF' || true
import torch
n = 1 << 30
a = torch.empty(n, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
times = []
for _ in range(20):
    s.record(); b.copy_(a); e.record(); e.synchronize(); times.append(s.elapsed_time(e) / 1e3)
times.sort()
print(f"device-to-device copy of 1 GiB: median {2 * n / times[10] / 1e9:.0f} GB/s (read + written), "
      f"best {2 * n / times[0] / 1e9:.0f} GB/s")
EOF
cat "$out/copy_bandwidth.txt"
# Every path at every width (bench_gradient registers the fused kernel up to the widths a GPU
# block's shared memory takes: kpmap::fused_max_features).
timeout 200 "$build/tests/perf/bench_gradient" --x_mib=1024 --features=16,64,256,1024,4096 \
  --benchmark_min_time=0.2 > "$out/bench_gradient.txt" 2>&1 || echo "bench_gradient: exit $?" >> "$out/bench_gradient.txt"
cat "$out/bench_gradient.txt"
