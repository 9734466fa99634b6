# Finds kpmap's dependencies: Kokkos and MPI (kpmap::collectives), and with KPMAP_BUILD_MINIAPP
# those of the mini-app too. Kokkos_ROOT / KokkosKernels_ROOT select a site install
# (Spack, modules); without them the prefix that scripts/setup.sh fills is searched.
if(NOT DEFINED Kokkos_ROOT AND NOT DEFINED ENV{Kokkos_ROOT})
  if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(_kpmap_cache "$ENV{XDG_CACHE_HOME}")
  else()
    set(_kpmap_cache "$ENV{HOME}/.cache")
  endif()
  list(APPEND CMAKE_PREFIX_PATH "${_kpmap_cache}/kpmap/kokkos-3.4.01")
endif()

find_package(Kokkos 3.4 REQUIRED CONFIG)
find_package(MPI REQUIRED COMPONENTS CXX)
if(NOT KPMAP_BUILD_MINIAPP)
  message(STATUS "kpmap: Kokkos ${Kokkos_VERSION} (${Kokkos_DIR}); collectives only (KPMAP_BUILD_MINIAPP=OFF)")
  return()
endif()

find_package(KokkosKernels REQUIRED CONFIG)
find_package(yaml-cpp REQUIRED CONFIG)
find_package(nlohmann_json 3 REQUIRED CONFIG)
find_package(CLI11 REQUIRED CONFIG)
# HDF5 (checkpoints, data files): the MPI build where there is one (Debian: libhdf5-mpich-dev).
# FindHDF5 probes its compiler wrapper in C.
enable_language(C)
set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 1.10 REQUIRED COMPONENTS C)
message(STATUS "kpmap: Kokkos ${Kokkos_VERSION} (${Kokkos_DIR}), Kokkos Kernels ${KokkosKernels_VERSION}, HDF5 ${HDF5_VERSION} (parallel: ${HDF5_IS_PARALLEL})")
