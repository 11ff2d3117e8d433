# What `cmake --install build --prefix P` puts in P:
#   include/tutti/*.h                the public headers (C++ and C API)
#   lib/libtutti.so.0 (+ .so link)   the library, with its soname
#   bin/tutti-run, bin/tutti-bench   the launcher and the benchmark
#   bin/tutti-info                   the topology, knobs and algorithms
#   bin/tutti-sim (+ its plot script) the simulator (docs/simulator.md)
#   lib/cmake/tutti/                 find_package(tutti) -> the target tutti::tutti
#   lib/pkgconfig/tutti.pc           pkg-config --cflags --libs tutti
# tests/install/ builds a consumer against such a prefix both ways.
include(CMakePackageConfigHelpers)

set(TUTTI_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tutti)

install(TARGETS tutti EXPORT tuttiTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tutti
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(TARGETS tutti-run tutti-bench tutti-info tutti-sim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/sim/tutti-sim-plot.py
  DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

install(EXPORT tuttiTargets NAMESPACE tutti:: DESTINATION ${TUTTI_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tuttiConfig.cmake.in
  ${PROJECT_BINARY_DIR}/generated/tuttiConfig.cmake
  INSTALL_DESTINATION ${TUTTI_CMAKE_DIR})
# 0.x: a minor release may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/generated/tuttiConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/generated/tuttiConfig.cmake
              ${PROJECT_BINARY_DIR}/generated/tuttiConfigVersion.cmake
  DESTINATION ${TUTTI_CMAKE_DIR} COMPONENT dev)

# The .pc file finds the prefix from where it lies, so `--prefix` at install time holds.
file(RELATIVE_PATH TUTTI_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tutti.pc.in ${PROJECT_BINARY_DIR}/generated/tutti.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/generated/tutti.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
