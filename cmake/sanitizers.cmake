# TUTTI_SANITIZE=address,undefined | thread : applied to every target. UBSan findings abort
# (-fno-sanitize-recover) so that they fail the test that hit them.
set(TUTTI_SANITIZE "" CACHE STRING "Sanitizers to build with (address,undefined or thread)")
if(TUTTI_SANITIZE)
  add_compile_options(-fsanitize=${TUTTI_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TUTTI_SANITIZE})
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
