# The linker: lld where the compiler can drive it (Debian's lld, which scripts/setup.sh
# installs), else the toolchain's default. Linking the test binaries and tools against the
# static layers is most of a build's serial tail: lld links them about 3x faster than GNU ld
# (docs/testing.md, "Measured times"). TUTTI_LINKER=default keeps the toolchain's choice.
set(TUTTI_LINKER "lld" CACHE STRING "Linker: lld (where the compiler can use it) or default")
if(TUTTI_LINKER STREQUAL "lld")
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" TUTTI_HAVE_LLD)
  if(TUTTI_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  else()
    message(STATUS "tutti: lld not found, linking with the default linker")
  endif()
elseif(NOT TUTTI_LINKER STREQUAL "default")
  message(FATAL_ERROR "TUTTI_LINKER is lld or default, not '${TUTTI_LINKER}'")
endif()
