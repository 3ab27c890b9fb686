# Compiler settings shared by every ZKDV target.

find_program(ZKDV_CCACHE ccache)
if(ZKDV_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${ZKDV_CCACHE}")
endif()

# Applies the project's warning level to one of its own targets.
function(zkdv_target_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra)
  endif()
endfunction()
