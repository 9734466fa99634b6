# Install rules and a CMake package config with two components (docs/collectives.md):
#   find_package(kpmap COMPONENTS collectives)  -> kpmap::collectives; finds Kokkos and MPI only
#   find_package(kpmap)                          -> every installed component: kpmap::kpmap too
#                                                   (the mini-app's layers) unless built with
#                                                   KPMAP_BUILD_MINIAPP=OFF
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(_kpmap_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/kpmap)

install(TARGETS kpmap_collectives EXPORT kpmapCollectivesTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES "${PROJECT_BINARY_DIR}/include/kpmap/config.hpp"
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kpmap)
if(KPMAP_BUILD_MINIAPP)
  install(TARGETS kpmap EXPORT kpmapTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(TARGETS kpmap_driver RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT kpmapTargets NAMESPACE kpmap:: DESTINATION ${_kpmap_cmake_dir})
  install(DIRECTORY src/kpmap DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp")
else()
  # The collectives' headers alone: core, mesh, collectives and the umbrella header.
  install(DIRECTORY src/kpmap/core src/kpmap/mesh src/kpmap/collectives
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kpmap FILES_MATCHING PATTERN "*.hpp")
  install(FILES src/kpmap/collectives.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kpmap)
endif()

install(EXPORT kpmapCollectivesTargets NAMESPACE kpmap:: DESTINATION ${_kpmap_cmake_dir})
configure_package_config_file(cmake/kpmapConfig.cmake.in
  "${PROJECT_BINARY_DIR}/kpmapConfig.cmake" INSTALL_DESTINATION ${_kpmap_cmake_dir})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/kpmapConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/kpmapConfig.cmake" "${PROJECT_BINARY_DIR}/kpmapConfigVersion.cmake"
  DESTINATION ${_kpmap_cmake_dir})
