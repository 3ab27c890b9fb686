# Finds libtorch for one of the two lanes (docs/compatibility.md):
#   Debian lane  Debian 12's libtorch-dev (1.13, CPU), found by find_package as installed.
#   PyPI lane    the libtorch inside a Python environment's `torch` package, chosen with
#                -DZKDV_TORCH_PYTHON=/path/to/venv/bin/python (packaging/make-pypi-venv.sh
#                makes that environment and prints the path).
# The C++ standard follows what the found libtorch's headers require.

set(ZKDV_TORCH_PYTHON "" CACHE FILEPATH
  "Python interpreter whose torch package provides libtorch (the PyPI lane); empty: the system libtorch")

if(ZKDV_TORCH_PYTHON)
  execute_process(
    COMMAND "${ZKDV_TORCH_PYTHON}" -c
      "import os, torch, torch.utils; print(torch.utils.cmake_prefix_path); print(os.path.join(os.path.dirname(torch.__file__), 'lib')); print(torch.__version__)"
    OUTPUT_VARIABLE _zkdv_torch_query
    ERROR_VARIABLE _zkdv_torch_error
    RESULT_VARIABLE _zkdv_torch_result
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _zkdv_torch_result EQUAL 0)
    message(FATAL_ERROR "ZKDV_TORCH_PYTHON=${ZKDV_TORCH_PYTHON} cannot import torch:\n${_zkdv_torch_error}")
  endif()
  string(REPLACE "\n" ";" _zkdv_torch_query "${_zkdv_torch_query}")
  list(GET _zkdv_torch_query 0 _zkdv_torch_prefix)
  list(GET _zkdv_torch_query 1 _zkdv_torch_libdir)
  list(GET _zkdv_torch_query 2 ZKDV_TORCH_PYTHON_VERSION)
  # TorchConfig.cmake looks for libtorch.so and libc10.so with its own folder only as a
  # hint, after the system's library folders: on a machine that also has Debian's
  # libtorch-dev it would mix the package's headers with Debian's 1.13 libraries.
  list(PREPEND CMAKE_PREFIX_PATH "${_zkdv_torch_prefix}")
  list(PREPEND CMAKE_LIBRARY_PATH "${_zkdv_torch_libdir}")
  message(STATUS "libtorch from Python torch ${ZKDV_TORCH_PYTHON_VERSION}: ${_zkdv_torch_prefix}")
  # PyPI's CUDA build loads NCCL, cuDNN and the CUDA libraries from the `nvidia` packages
  # beside it (its own run path). Linking an executable resolves them too, and the CUDA
  # toolkit's older copies under /usr/local/cuda, on libtorch's link line, would be found
  # first and lack symbols: the packages' folders come first.
  get_filename_component(_zkdv_site_packages "${_zkdv_torch_libdir}/../.." ABSOLUTE)
  file(GLOB _zkdv_nvidia_libdirs LIST_DIRECTORIES true "${_zkdv_site_packages}/nvidia/*/lib")
  foreach(_zkdv_dir IN LISTS _zkdv_nvidia_libdirs)
    add_link_options("LINKER:-rpath-link,${_zkdv_dir}")
  endforeach()
endif()

find_package(Torch REQUIRED)

if(ZKDV_TORCH_PYTHON)
  get_filename_component(_zkdv_torch_found_dir "${TORCH_LIBRARY}" DIRECTORY)
  get_filename_component(_zkdv_torch_found_dir "${_zkdv_torch_found_dir}" REALPATH)
  get_filename_component(_zkdv_torch_libdir "${_zkdv_torch_libdir}" REALPATH)
  if(NOT _zkdv_torch_found_dir STREQUAL _zkdv_torch_libdir)
    message(FATAL_ERROR "libtorch was found at ${TORCH_LIBRARY}, not in ${_zkdv_torch_libdir} "
      "(a stale CMake cache? configure a new build folder)")
  endif()
endif()

# The lane's Python: the one whose torch is this libtorch (the Python frontend is built for
# it, and the tests that run Python use it).
if(ZKDV_TORCH_PYTHON)
  set(ZKDV_LANE_PYTHON "${ZKDV_TORCH_PYTHON}")
else()
  set(ZKDV_LANE_PYTHON "/usr/bin/python3")
endif()

# libtorch 2.x headers need C++20 and say so on their `torch` target; 1.13's need C++17.
get_target_property(_zkdv_torch_features torch INTERFACE_COMPILE_FEATURES)
if(_zkdv_torch_features MATCHES "cxx_std_20")
  set(CMAKE_CXX_STANDARD 20)
endif()
