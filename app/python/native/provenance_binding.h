#pragma once
// zkdv._native.provenance: dataset commitments and weight matching (zkdv.provenance), bound
// apart from the recorder so that this half includes no torch header.

#include <pybind11/pybind11.h>

namespace zkdv::python {

// Defines the submodule's functions in `module`.
void bindProvenance(pybind11::module_& module);

}  // namespace zkdv::python
