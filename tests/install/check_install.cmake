# Installs the kpmap build tree into SCRATCH/prefix, builds the consumer project against it
# and runs the consumer on 2 ranks. The consumer gets the build's compiler and linker flags, so a
# sanitized kpmap (asan preset) links into a sanitized consumer.
file(REMOVE_RECURSE ${SCRATCH})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${KPMAP_BUILD_DIR} --prefix ${SCRATCH}/prefix)
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${SCRATCH}/build -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}"
  -DCMAKE_PREFIX_PATH=${SCRATCH}/prefix -DKokkos_DIR=${KOKKOS_DIR} -DKokkosKernels_DIR=${KOKKOSKERNELS_DIR})
run(${CMAKE_COMMAND} --build ${SCRATCH}/build)
run(${MPIEXEC} -n 2 ${SCRATCH}/build/consumer)
