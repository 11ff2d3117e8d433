# TUTTI_SANITIZE=address,undefined | thread : applied to every target.
set(TUTTI_SANITIZE "" CACHE STRING "Sanitizers to build with (address,undefined or thread)")
if(TUTTI_SANITIZE)
  add_compile_options(-fsanitize=${TUTTI_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TUTTI_SANITIZE})
endif()
