# Installs the kpmap build tree into SCRATCH/prefix and builds two consumer projects against it:
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
file(REMOVE_RECURSE ${SCRATCH})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
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

# The poison works: asking for the mini-app's component fails.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${SCRATCH}/poison_check
  ${common} ${poisoned} -DKPMAP_COMPONENTS=miniapp RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "poisoned: the consumer looked for")
  message(FATAL_ERROR "the poisoned packages did not stop a consumer of the miniapp component:\n${out}")
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
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer_full -B ${build} ${common} -DKokkosKernels_DIR=${KOKKOSKERNELS_DIR})
run(${CMAKE_COMMAND} --build ${build})
run(${MPIEXEC} -n 2 ${build}/consumer)
