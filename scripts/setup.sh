#!/usr/bin/env bash
# Installs what kpmap needs and is missing; safe to run again.
#   - Debian packages (compiler, CMake, MPICH, yaml-cpp, GoogleTest, CLI11, ...)
#   - Kokkos 3.4.01 + Kokkos Kernels 3.4.01 from Debian's trilinos source package, built with the
#     OpenMP and Serial backends into ${XDG_CACHE_HOME:-$HOME/.cache}/kpmap/kokkos-3.4.01, rebuilt
#     only when the recipe below changes.
# With Kokkos_ROOT and KokkosKernels_ROOT set (Spack, modules), nothing is built.
# Exit codes: 0 ready, 2 this machine cannot be set up by this script (message says what to install).
set -euo pipefail

say() { printf '[kpmap setup] %s\n' "$*" >&2; }

DEB_PACKAGES=(cmake make g++ pkg-config mpich libmpich-dev libyaml-cpp-dev libgtest-dev
  nlohmann-json3-dev libcli11-dev libbenchmark-dev libopenblas-dev dpkg-dev python3 python3-matplotlib
  iproute2 clang libclang-rt-14-dev libhdf5-mpich-dev hdf5-tools valgrind)

KOKKOS_VERSION=3.4.01
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/kpmap"
KOKKOS_PREFIX="$CACHE_ROOT/kokkos-$KOKKOS_VERSION"

need_manual_install() {
  say "cannot install dependencies here: $1"
  say "install these yourself, then run again:"
  say "  Debian packages (or equivalents): ${DEB_PACKAGES[*]}"
  say "  Kokkos >= 3.4 (OpenMP and Serial backends) and Kokkos Kernels, then export"
  say "  Kokkos_ROOT=<prefix> KokkosKernels_ROOT=<prefix>"
  exit 2
}

install_debian_packages() {
  local missing=() p
  for p in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && { say "Debian packages: all present"; return; }
  [ "$(id -u)" -eq 0 ] || need_manual_install "not root; missing packages: ${missing[*]}"
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Adds a deb-src entry for bookworm (deb822 form, same keyring as the main entry) when none exists.
ensure_deb_src() {
  if grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return
  fi
  say "adding a deb-src entry for bookworm"
  cat >/etc/apt/sources.list.d/kpmap-deb-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt-get update -qq
}

# The recipe: any change to this function changes the stamp and triggers a rebuild.
build_kokkos_stack() {
  local src=$1 prefix=$2 jobs
  jobs=$(nproc)
  cmake -S "$src/kokkos" -B "$src/build-kokkos" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON \
    -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF >/dev/null
  cmake --build "$src/build-kokkos" -j "$jobs" >/dev/null
  cmake --install "$src/build-kokkos" >/dev/null
  # No explicit instantiation: kpmap instantiates the few kernels it calls. Host gemv goes to
  # OpenBLAS through the BLAS TPL (see docs/performance.md for the measurements behind this).
  cmake -S "$src/kokkos-kernels" -B "$src/build-kk" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DKokkos_ROOT="$prefix" \
    -DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_ENABLE_TESTS=OFF \
    -DKokkosKernels_ENABLE_EXAMPLES=OFF -DKokkosKernels_ENABLE_TPL_BLAS=ON >/dev/null 2>&1
  cmake --build "$src/build-kk" -j "$jobs" >/dev/null
  cmake --install "$src/build-kk" >/dev/null
}

install_kokkos() {
  if [ -n "${Kokkos_ROOT:-}" ] && [ -n "${KokkosKernels_ROOT:-}" ]; then
    say "using site Kokkos: Kokkos_ROOT=$Kokkos_ROOT KokkosKernels_ROOT=$KokkosKernels_ROOT"
    return
  fi
  local stamp
  stamp=$( (declare -f build_kokkos_stack; echo "$KOKKOS_VERSION") | sha256sum | cut -c1-16)
  if [ -f "$KOKKOS_PREFIX/.kpmap-recipe" ] && [ "$(cat "$KOKKOS_PREFIX/.kpmap-recipe")" = "$stamp" ]; then
    say "Kokkos $KOKKOS_VERSION + Kokkos Kernels: cached in $KOKKOS_PREFIX"
    return
  fi
  [ "$(id -u)" -eq 0 ] || need_manual_install "not root; cannot add a deb-src entry for trilinos"
  ensure_deb_src
  work=$(mktemp -d "${TMPDIR:-/tmp}/kpmap-kokkos.XXXXXX")
  trap 'rm -rf "${work:-}"' EXIT
  say "downloading Debian's trilinos source package (Kokkos $KOKKOS_VERSION lives inside it)"
  (cd "$work" && apt-get source --download-only -qq trilinos >/dev/null 2>&1) ||
    need_manual_install "apt-get source trilinos failed"
  local tarball
  tarball=$(ls "$work"/trilinos_*.orig.tar.* | head -n1)
  say "extracting packages/kokkos and packages/kokkos-kernels"
  tar -xf "$tarball" -C "$work" --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
  local src
  src=$(ls -d "$work"/*/packages | head -n1)
  say "building Kokkos and Kokkos Kernels into $KOKKOS_PREFIX (a few minutes)"
  rm -rf "$KOKKOS_PREFIX"
  build_kokkos_stack "$src" "$KOKKOS_PREFIX"
  echo "$stamp" >"$KOKKOS_PREFIX/.kpmap-recipe"
  say "Kokkos ready in $KOKKOS_PREFIX"
}

main() {
  if [ -n "${Kokkos_ROOT:-}" ] && [ -n "${KokkosKernels_ROOT:-}" ] && ! command -v apt-get >/dev/null; then
    say "no apt-get: assuming the site provides the other dependencies"
    return
  fi
  [ -r /etc/debian_version ] && command -v apt-get >/dev/null || need_manual_install "not a Debian system"
  install_debian_packages
  install_kokkos
}

main "$@"
