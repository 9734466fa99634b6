# kpmap_add_test(NAME SOURCES ... [MPI] [COLLECTIVES] [NP n ...] [LABELS ...] [TIMEOUT s] [ARGS ...])
#   Builds a GoogleTest executable (MPI-aware main: tests/support/mpi_main.cpp) and registers it:
#   without MPI as one test at np 1 (label unit); with MPI once per rank count in NP
#   (default 1 2 4, bounded by MPIEXEC_MAX_NUMPROCS) as NAME.npN (label mpi). It links
#   kpmap::kpmap, or with COLLECTIVES kpmap::collectives alone and gets the label collectives too
#   (unless it has the label perf): `ctest -L collectives` runs them, also when kpmap is built
#   with KPMAP_BUILD_MINIAPP=OFF.
# kpmap_add_command_test(NAME NP n COMMAND ... [LABELS ...] [TIMEOUT s] [PASS_REGULAR_EXPRESSION re])
#   Runs a command (typically the kpmap driver) under mpiexec at one rank count.
# Every test gets OMP_NUM_THREADS=1 (tests run up to 4 ranks on small machines) and a TIMEOUT.
# Rank counts above MPIEXEC_MAX_NUMPROCS are skipped, with one warning per configure run.

# Records a skipped rank count; the first skip schedules the warning for the end of configure.
function(_kpmap_skip_np np)
  get_property(skipped GLOBAL PROPERTY KPMAP_SKIPPED_NP)
  if(NOT skipped AND CMAKE_VERSION VERSION_GREATER_EQUAL 3.19)
    cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _kpmap_warn_skipped_np)
  endif()
  if(NOT np IN_LIST skipped)
    set_property(GLOBAL APPEND PROPERTY KPMAP_SKIPPED_NP ${np})
  endif()
  # Without DEFER (CMake < 3.19) the first skip warns at once.
  if(NOT skipped AND CMAKE_VERSION VERSION_LESS 3.19)
    _kpmap_warn_skipped_np()
  endif()
endfunction()

function(_kpmap_warn_skipped_np)
  get_property(skipped GLOBAL PROPERTY KPMAP_SKIPPED_NP)
  list(SORT skipped COMPARE NATURAL)
  list(JOIN skipped ", np" counts)
  message(WARNING "MPIEXEC_MAX_NUMPROCS is ${MPIEXEC_MAX_NUMPROCS}: the np${counts} MPI tests "
    "are skipped (they need more ranks). The CMake presets set MPIEXEC_MAX_NUMPROCS=4, which "
    "runs the default rank counts 1, 2 and 4 (mpiexec oversubscribes the cores if needed).")
endfunction()

function(_kpmap_mpiexec_command out np)
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS} PARENT_SCOPE)
endfunction()

# PROCESSORS lets `ctest -j` count a test's ranks.
function(_kpmap_test_properties name timeout labels)
  cmake_parse_arguments(P "" "NP" "" ${ARGN})
  if(NOT P_NP)
    set(P_NP 1)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "${labels}" PROCESSORS ${P_NP}
    ENVIRONMENT "OMP_NUM_THREADS=1;OMP_PROC_BIND=false")
endfunction()

function(kpmap_add_test name)
  cmake_parse_arguments(T "MPI;COLLECTIVES" "TIMEOUT" "SOURCES;NP;LABELS;ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE kpmap_test_main)  # and kpmap::collectives
  if(NOT T_COLLECTIVES)
    target_link_libraries(${name} PRIVATE kpmap::kpmap)
  endif()
  if(NOT T_LABELS)
    if(T_MPI)
      set(T_LABELS mpi)
    else()
      set(T_LABELS unit)
    endif()
  endif()
  if(T_COLLECTIVES AND NOT "perf" IN_LIST T_LABELS)
    list(APPEND T_LABELS collectives)
  endif()
  if(NOT T_MPI)
    add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
    _kpmap_test_properties(${name} ${T_TIMEOUT} "${T_LABELS}")
    return()
  endif()
  if(NOT T_NP)
    set(T_NP 1 2 4)
  endif()
  foreach(np IN LISTS T_NP)
    if(np GREATER MPIEXEC_MAX_NUMPROCS)
      _kpmap_skip_np(${np})
      continue()
    endif()
    _kpmap_mpiexec_command(launcher ${np})
    add_test(NAME ${name}.np${np}
      COMMAND ${launcher} $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS} ${T_ARGS})
    _kpmap_test_properties(${name}.np${np} ${T_TIMEOUT} "${T_LABELS}" NP ${np})
  endforeach()
endfunction()

function(kpmap_add_command_test name)
  cmake_parse_arguments(T "WILL_FAIL" "NP;TIMEOUT;PASS_REGULAR_EXPRESSION" "COMMAND;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(NOT T_NP)
    set(T_NP 1)
  endif()
  if(T_NP GREATER MPIEXEC_MAX_NUMPROCS)
    _kpmap_skip_np(${T_NP})
    return()
  endif()
  _kpmap_mpiexec_command(launcher ${T_NP})
  list(GET T_COMMAND 0 program)
  list(REMOVE_AT T_COMMAND 0)
  add_test(NAME ${name} COMMAND ${launcher} ${program} ${MPIEXEC_POSTFLAGS} ${T_COMMAND})
  _kpmap_test_properties(${name} ${T_TIMEOUT} "${T_LABELS}" NP ${T_NP})
  if(T_PASS_REGULAR_EXPRESSION)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${T_PASS_REGULAR_EXPRESSION}")
  endif()
  if(T_WILL_FAIL)
    set_tests_properties(${name} PROPERTIES WILL_FAIL TRUE)
  endif()
endfunction()
