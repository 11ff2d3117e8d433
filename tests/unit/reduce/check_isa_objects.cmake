# Run by CTest (reduce_isa_objects_define_no_weak_symbols): the objects of the kernel files
# compiled for one instruction set (kernels_avx2.cc, kernels_avx512*.cc) must not define a
# weak or otherwise mergeable symbol, and no global one but their kernel tables. The
# linker keeps one copy of a weak symbol for the whole program, so an inline function or
# template instance compiled there with -mavx512f could be what a generic caller runs on
# a CPU without AVX-512 (src/reduce/kernels_simd.h).
#   cmake -DNM=<nm> -DOBJECTS=<obj1|obj2|...> -P check_isa_objects.cmake
string(REPLACE "|" ";" objects "${OBJECTS}")
set(checked 0)
foreach(obj IN LISTS objects)
  if(NOT obj MATCHES "kernels_avx[^/]*\\.o$")
    continue()
  endif()
  execute_process(COMMAND "${NM}" -C --defined-only "${obj}"
                  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${obj}")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  foreach(line IN LISTS lines)
    # "<address> <type> <name>": lower-case types are local, except the weak ones (v, w).
    if(line MATCHES "^[0-9a-f]* ([A-Zvwu]) (.*)$")
      set(type "${CMAKE_MATCH_1}")
      set(name "${CMAKE_MATCH_2}")
      if(NOT (type STREQUAL "T" AND name MATCHES "(Combine|Average|StreamCopy|StreamCopyTwo)Kernel\\("))
        message(FATAL_ERROR "${obj} defines '${name}' (nm type ${type}); see kernels_simd.h")
      endif()
    endif()
  endforeach()
  math(EXPR checked "${checked} + 1")
endforeach()
if(checked LESS 3)
  message(FATAL_ERROR "expected the three kernels_avx*.o objects, found ${checked} in: ${OBJECTS}")
endif()
message(STATUS "${checked} instruction-set objects define only their kernel tables")
