# Installs a kpmap build tree into SCRATCH/prefix and builds two consumer projects against it:
#   consumer/       kpmap::collectives alone. Configured with poisoned yaml-cpp, Kokkos Kernels,
#                   nlohmann-json, CLI11 and HDF5 packages (a config or find module that stops
#                   CMake), so finding anything beyond Kokkos and MPI fails; then its link line
#                   must name kpmap_collectives and none of the mini-app's libraries, and its
#                   compiler-written dependency file none of their headers. Run on 2 ranks.
#                   The same project asking for the miniapp component must fail under the poison.
#   consumer_full/  find_package(kpmap) and kpmap::kpmap, as before the split. Run on 2 ranks.
# Every installed header of the collectives (core, mesh, collectives, the umbrella header) may
# include only Kokkos, MPI, the standard library and each other. The consumers get the build's
# compiler and linker flags, so a sanitized kpmap (asan preset) links into sanitized consumers.
#
# MINIAPP=OFF: the build tree has kpmap::collectives alone (KPMAP_BUILD_MINIAPP=OFF). Then the
# install must hold no mini-app library, driver, header or export; asking for the miniapp
# component must fail with the package config's message, and consumer_full must fail to
# configure (no kpmap::kpmap).
# BUILD_SOURCE=DIR: first configure the kpmap source tree DIR in SCRATCH/build with
# KPMAP_BUILD_MINIAPP=OFF, KPMAP_ENABLE_TESTS=OFF and CMAKE_DISABLE_FIND_PACKAGE_<P> for each
# mini-app dependency (a required find_package of one fails; CMake must report every switch as
# unused, so none was called at all), build it, and check that build tree (with MINIAPP=OFF);
# GENERATOR, CXX_COMPILER and EXECUTION_SPACE are the outer build's.
file(REMOVE_RECURSE ${SCRATCH})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
if(NOT DEFINED MINIAPP)
  set(MINIAPP ON)
endif()
set(miniapp_deps KokkosKernels yaml-cpp nlohmann_json CLI11 HDF5)

if(BUILD_SOURCE)
  set(MINIAPP OFF)
  set(KPMAP_BUILD_DIR ${SCRATCH}/build)
  set(disabled)
  foreach(pkg IN LISTS miniapp_deps)
    list(APPEND disabled -DCMAKE_DISABLE_FIND_PACKAGE_${pkg}=ON)
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${BUILD_SOURCE} -B ${KPMAP_BUILD_DIR} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}" -DKokkos_DIR=${KOKKOS_DIR}
    -DKPMAP_EXECUTION_SPACE=${EXECUTION_SPACE} -DKPMAP_BUILD_MINIAPP=OFF -DKPMAP_ENABLE_TESTS=OFF
    ${disabled} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring kpmap with KPMAP_BUILD_MINIAPP=OFF failed (${rc})")
  endif()
  # Not even an optional find_package of them: CMake reports each switch as unused.
  string(FIND "${out}" "not used by the project:" at)
  set(unused "")
  if(at GREATER -1)
    string(SUBSTRING "${out}" ${at} -1 unused)
  endif()
  foreach(pkg IN LISTS miniapp_deps)
    if(NOT unused MATCHES "CMAKE_DISABLE_FIND_PACKAGE_${pkg}\n")
      message(FATAL_ERROR "KPMAP_BUILD_MINIAPP=OFF read CMAKE_DISABLE_FIND_PACKAGE_${pkg}: "
        "find_package(${pkg}) was called")
    endif()
  endforeach()
  run(${CMAKE_COMMAND} --build ${KPMAP_BUILD_DIR} --parallel 2)
endif()

set(prefix ${SCRATCH}/prefix)
run(${CMAKE_COMMAND} --install ${KPMAP_BUILD_DIR} --prefix ${prefix})

# The collectives' installed headers: no include outside Kokkos, MPI, the standard library and
# kpmap's own core, mesh and collectives.
file(GLOB_RECURSE headers RELATIVE ${prefix}/include
  ${prefix}/include/kpmap/core/*.hpp ${prefix}/include/kpmap/mesh/*.hpp
  ${prefix}/include/kpmap/collectives/*.hpp)
list(APPEND headers kpmap/collectives.hpp kpmap/config.hpp)
foreach(h IN LISTS headers)
  file(STRINGS ${prefix}/include/${h} includes REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS includes)
    if(line MATCHES "[<\"]kpmap/" AND NOT line MATCHES "[<\"]kpmap/(core/|mesh/|collectives/|collectives\\.hpp|config\\.hpp)")
      message(FATAL_ERROR "${h} includes a header of the mini-app's layers: ${line}")
    endif()
    if(line MATCHES "[<\"](yaml-cpp|nlohmann|CLI|hdf5|H5|KokkosBlas|KokkosKernels|KokkosSparse|KokkosBatched|KokkosGraph)")
      message(FATAL_ERROR "${h} includes a header of a mini-app dependency: ${line}")
    endif()
  endforeach()
endforeach()
list(LENGTH headers n_headers)
message("checked the includes of ${n_headers} installed collectives headers")

if(NOT MINIAPP)
  # The collectives alone: no mini-app library, driver, header or export.
  file(GLOB_RECURSE extra RELATIVE ${prefix} ${prefix}/libkpmap.* ${prefix}/kpmapTargets*.cmake
    ${prefix}/bin/*)
  foreach(dir app bench config data io model optim report train)
    if(EXISTS ${prefix}/include/kpmap/${dir})
      list(APPEND extra include/kpmap/${dir})
    endif()
  endforeach()
  if(extra)
    message(FATAL_ERROR "a collectives-only install holds a part of the mini-app: ${extra}")
  endif()
endif()

# Poisoned packages: finding any of them stops the consumer's configuration.
set(poison ${SCRATCH}/poison)
set(poisoned)
foreach(pkg KokkosKernels yaml-cpp nlohmann_json CLI11)
  file(WRITE ${poison}/${pkg}/${pkg}Config.cmake
    "message(FATAL_ERROR \"poisoned: the consumer looked for ${pkg}\")\n")
  list(APPEND poisoned -D${pkg}_DIR=${poison}/${pkg})
endforeach()
file(WRITE ${poison}/modules/FindHDF5.cmake "message(FATAL_ERROR \"poisoned: the consumer looked for HDF5\")\n")
file(WRITE ${poison}/HDF5/hdf5-config.cmake "message(FATAL_ERROR \"poisoned: the consumer looked for HDF5\")\n")
list(APPEND poisoned -DHDF5_DIR=${poison}/HDF5 -DCMAKE_MODULE_PATH=${poison}/modules)
set(common -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}" -DCMAKE_PREFIX_PATH=${prefix} -DKokkos_DIR=${KOKKOS_DIR})

# The poison works: asking for the mini-app's component fails. Without the mini-app, the package
# config says so before it looks for any dependency.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${SCRATCH}/poison_check
  ${common} ${poisoned} -DKPMAP_COMPONENTS=miniapp RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(MINIAPP)
  set(want "poisoned: the consumer looked for")
else()
  set(want "KPMAP_BUILD_MINIAPP=OFF:")
endif()
if(rc EQUAL 0 OR NOT out MATCHES "${want}")
  message(FATAL_ERROR "asking for the miniapp component did not fail with '${want}':\n${out}")
endif()

set(build ${SCRATCH}/collectives)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${build} ${common} ${poisoned})
run(${CMAKE_COMMAND} --build ${build})
file(READ ${build}/CMakeFiles/consumer.dir/link.txt link)
if(NOT link MATCHES "libkpmap_collectives\\.a")
  message(FATAL_ERROR "the collectives consumer does not link libkpmap_collectives.a: ${link}")
endif()
if(link MATCHES "libkpmap\\.a|kokkoskernels|yaml-cpp|hdf5|CLI11")
  message(FATAL_ERROR "the collectives consumer links a mini-app library: ${link}")
endif()
file(READ ${build}/CMakeFiles/consumer.dir/main.cpp.o.d deps)
if(NOT deps MATCHES "kpmap/collectives\\.hpp")
  message(FATAL_ERROR "the dependency file does not list kpmap/collectives.hpp: ${deps}")
endif()
if(deps MATCHES "yaml-cpp/|nlohmann/|CLI/|hdf5|H5[A-Za-z]*\\.h|KokkosBlas|KokkosKernels|KokkosSparse|KokkosBatched|KokkosGraph|kpmap/(config|train|model|data|io|optim|report|bench|app)/")
  message(FATAL_ERROR "the collectives consumer compiled a header of the mini-app or its dependencies: ${CMAKE_MATCH_0}")
endif()
run(${MPIEXEC} -n 2 ${build}/consumer)

set(build ${SCRATCH}/full)
if(NOT MINIAPP)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer_full -B ${build} ${common}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0 OR NOT out MATCHES "kpmap::kpmap")
    message(FATAL_ERROR "a consumer of kpmap::kpmap configured against a collectives-only install:\n${out}")
  endif()
  message("collectives-only install: the consumer of kpmap::kpmap fails to configure, as it must")
  return()
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer_full -B ${build} ${common} -DKokkosKernels_DIR=${KOKKOSKERNELS_DIR})
run(${CMAKE_COMMAND} --build ${build})
run(${MPIEXEC} -n 2 ${build}/consumer)
