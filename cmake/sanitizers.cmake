# TUTTI_SANITIZE=address,undefined | thread : applied to every target. UBSan findings abort
# (-fno-sanitize-recover) so that they fail the test that hit them.
set(TUTTI_SANITIZE "" CACHE STRING "Sanitizers to build with (address,undefined or thread)")
if(TUTTI_SANITIZE)
  add_compile_options(-fsanitize=${TUTTI_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TUTTI_SANITIZE})
  # What code may ask of the build, under either compiler (clang 14 does not define GCC's
  # __SANITIZE_THREAD__): TUTTI_TSAN, TUTTI_ASAN.
  if(TUTTI_SANITIZE MATCHES "thread")
    add_compile_definitions(TUTTI_TSAN=1)
  endif()
  if(TUTTI_SANITIZE MATCHES "address")
    add_compile_definitions(TUTTI_ASAN=1)
  endif()
  # clang links a C program with the C runtimes of the sanitizers only, while libtutti.so's
  # C++ code needs UBSan's C++ part (its vptr checks), and that the C++ ABI library: the C
  # test programs link both.
  if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
    add_link_options($<$<LINK_LANGUAGE:C>:-fsanitize-link-c++-runtime> $<$<LINK_LANGUAGE:C>:-lstdc++>)
  endif()
endif()

# TUTTI_FUZZ=ON builds fuzz/'s targets as libFuzzer binaries: every object is instrumented
# for coverage (fuzzer-no-link) and only the fuzz targets link libFuzzer's main
# (fuzz/CMakeLists.txt). libFuzzer ships with clang only.
option(TUTTI_FUZZ "Build the fuzz targets with libFuzzer (clang only; see the fuzz preset)" OFF)
if(TUTTI_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TUTTI_FUZZ=ON needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                        "cmake --preset fuzz")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
