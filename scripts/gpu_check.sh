#!/usr/bin/env bash
# Runs a CUDA build of kpmap on a GPU machine that has no Kokkos, MPI or kpmap installed:
# pack the build and the shared libraries it needs on the build machine, carry the folder to the
# GPU machine, run the tests and the gradient benchmark there (docs/portability.md, "Running on
# GPUs"; the build is what ../shared/tools/kokkos4_check.sh kp_cuda makes).
#
#   [CUDA_LIB_DIR=DIR] scripts/gpu_check.sh pack BUILD_DIR DEST
#       on the build machine: DEST/payload.tar.xz holds the build folder without objects (its
#       programs stripped), every shared library they and MPICH's launcher load except the C and
#       C++ runtimes, glibc's own libraries and the CUDA driver (libcudart from CUDA_LIB_DIR, e.g.
#       kokkos4_check.sh's $P/cuda12/lib; a library ldd cannot find stops the pack), the launcher,
#       h5dump (the checkpoint tests read files with it) and UCX's shared-memory module;
#       DEST/build_dir and DEST/source_dir the original paths
#   [BENCH=0] scripts/gpu_check.sh run DEST OUT [ctest args]
#       on the GPU machine, from the repository root: links the source folder's original path to
#       this checkout, unpacks the build at its original path (never over a real build), makes the
#       build machine's python3, cmake, mpiexec and h5dump paths that the CTest files name lead to
#       this machine's and to the carried ones, runs ctest -LE 'perf|install' but
#       collectives_unsupported_element_type and fuzz.* (those compile code, which needs the build
#       machine's compilers and build files), then, unless BENCH=0, measures the device's copy
#       bandwidth (PyTorch, when the machine has it) and runs bench_gradient on the device; logs
#       into OUT
set -euo pipefail
cmd=${1:?pack or run}
shift

if [ "$cmd" = pack ]; then
  build=$(cd "${1:?BUILD_DIR}" && pwd)
  dest=${2:?DEST}
  if [ -e "$dest" ] && [ ! -e "$dest/build_dir" ] && [ -n "$(ls -A "$dest")" ]; then
    echo "gpu_check.sh pack: '$dest' holds files but no earlier pack (no build_dir): not overwritten" >&2
    exit 2
  fi
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  rm -rf "$dest"
  mkdir -p "$dest" "$stage/carry/lib" "$stage/carry/bin" "$stage/carry/ucx" "$stage/root"
  printf '%s\n' "$build" > "$dest/build_dir"
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:[A-Z]*=//p' "$build/CMakeCache.txt")
  printf '%s\n' "$src" > "$dest/source_dir"
  git -C "$src" rev-parse HEAD > "$dest/commit" 2>/dev/null || true
  # The build folder as the tests see it (programs, CTest files, generated data; no objects), its
  # programs stripped; they share most of their code, which xz's large window stores once.
  mkdir -p "$stage/root$build"
  tar -C "$build" -cf - --exclude='*.o' --exclude='*.a' --exclude='CMakeFiles' --exclude='.ninja_*' \
    --exclude='build.ninja' --exclude='compile_commands.json' . | tar -C "$stage/root$build" -xf -
  programs=$(find "$stage/root$build" -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q ELF' _ {} \; -print)
  launcher="/usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy /usr/bin/h5dump"
  # Every shared library the programs and MPICH's launcher load, but the C/C++ runtimes, glibc's
  # own libraries and the CUDA driver; a library ldd cannot find stops the pack.
  libs=$(printf '%s\n' $programs $launcher |
    LD_LIBRARY_PATH="${CUDA_LIB_DIR:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" xargs ldd 2>/dev/null || true)
  missing=$(printf '%s\n' "$libs" | awk '/not found/{print $1}' | grep -v '^libcuda\.so' | sort -u || true)
  if [ -n "$missing" ]; then
    echo "gpu_check.sh pack: not found by ldd (set CUDA_LIB_DIR for libcudart):" $missing >&2
    exit 1
  fi
  printf '%s\n' "$libs" | awk '/=> \//{print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libstdc\+\+|libgcc_s|libcuda)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/carry/lib/"; done
  printf '%s\n' $programs | xargs strip
  cp $launcher "$stage/carry/bin/"
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
if [ -d "$build/CMakeFiles" ]; then
  echo "gpu_check.sh run: '$build' is a real build here (it has CMakeFiles): not replaced" >&2
  exit 2
fi
# The source folder at the path the build names (a link to this checkout, made first, in case
# the build lies inside it), then the build at its original path; the libraries and MPI's
# launcher under /tmp/kpmap-carry. Python's tarfile unpacks, since the machine may have no xz.
src=$(cat "$dest/source_dir")
if [ "$src" != "$(pwd)" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$(pwd)" "$src"; fi
rm -rf /tmp/kpmap-unpack
python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1])
t.extractall("/tmp/kpmap-unpack", **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))' \
  "$dest/payload.tar.xz"
mkdir -p "$(dirname "$build")"
rm -rf "$build" /tmp/kpmap-carry
mv "/tmp/kpmap-unpack/root$build" "$build"
mv /tmp/kpmap-unpack/carry /tmp/kpmap-carry
carry=/tmp/kpmap-carry
system_ld_path=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$carry/bin:$PATH"
export UCX_MODULE_DIR="$carry/ucx" OMP_NUM_THREADS=1 HYDRA_LAUNCHER=fork
# The build machine's python3, cmake and mpiexec, as the CTest files name them (also inside
# `sh -c` strings and launcher options): links to this machine's where they are missing, else
# the paths rewritten wherever they end an argument.
python=$(sed -n 's/^_\?Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" | head -n 1)
mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
cmake=$(sed -n 's/^CMAKE_COMMAND:[A-Z]*=//p' "$build/CMakeCache.txt")
h5dump=$(sed -n 's/^KPMAP_H5DUMP:[A-Z]*=//p' "$build/CMakeCache.txt")
for pair in "$python=$(command -v python3)" "/usr/bin/python3=$(command -v python3)" \
            "$cmake=$(command -v cmake)" "$mpiexec=$carry/bin/mpiexec.hydra" "$h5dump=$carry/bin/h5dump"; do
  from=${pair%%=*} to=${pair#*=}
  [ -n "$from" ] && [ -n "$to" ] && [ "$from" != "$to" ] || continue
  if [ ! -e "$from" ]; then
    mkdir -p "$(dirname "$from")" && ln -s "$to" "$from"
  else
    find "$build" -name CTestTestfile.cmake -exec sed -i "s#$from\\([\" ]\\)#$to\\1#g" {} +
  fi
done
{
  echo "commit $(cat "$dest/commit" 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
  nproc
} > "$out/machine.txt" 2>&1
(cd "$build" && timeout 300 ctest -LE 'perf|install' -E '^(collectives_unsupported_element_type|fuzz\..*)$' -j 12 \
  --timeout 120 --output-on-failure "$@") > "$out/ctest.log" 2>&1 || echo "ctest: exit $? (124: cut at 300 s)" >> "$out/ctest.log"
tail -n 40 "$out/ctest.log"
if [ "${BENCH:-1}" = 0 ]; then exit 0; fi
# The device's copy bandwidth (bytes read + written per second, device to device), for reference.
LD_LIBRARY_PATH=$system_ld_path python3 - > "$out/copy_bandwidth.txt" 2>&1 <<'EOF' || true
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
