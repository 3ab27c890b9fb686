# Checks that an executable needs no libtorch library, directly or through another
# (cmake -DEXECUTABLE=path -P links_no_torch.cmake): the workstation lists devices and prints
# versions from a replay worker's hello and replays in worker processes, so loading libtorch's
# libraries (seconds of static initialisers, gigabytes of CUDA code on the PyPI lane) buys it
# nothing. Fails naming each torch library ldd lists; also fails when ldd says nothing.
cmake_minimum_required(VERSION 3.22)
if(NOT EXISTS "${EXECUTABLE}")
  message(FATAL_ERROR "links_no_torch: ${EXECUTABLE} does not exist")
endif()
execute_process(COMMAND ldd "${EXECUTABLE}" OUTPUT_VARIABLE libraries RESULT_VARIABLE status ERROR_VARIABLE errors)
if(NOT status EQUAL 0 OR NOT libraries MATCHES "libc\\.so")
  message(FATAL_ERROR "links_no_torch: ldd ${EXECUTABLE} failed (${status}): ${errors}")
endif()
string(REGEX MATCHALL "lib(torch[A-Za-z_]*|c10[A-Za-z_]*)\\.so[^ \t\n]*" torch "${libraries}")
if(torch)
  list(REMOVE_DUPLICATES torch)
  list(JOIN torch ", " shown)
  # On one line (FATAL_ERROR wraps its text), for the test that proves the check can fail.
  message(STATUS "links_no_torch: loads libtorch libraries: ${shown}")
  message(FATAL_ERROR "links_no_torch: ${EXECUTABLE} loads libtorch libraries: ${shown}")
endif()
message(STATUS "links_no_torch: ${EXECUTABLE} loads no libtorch library")
