// zkdv._native.provenance: the core calls `zkdv-audit dataset` and `match-weights` make, each
// returning the JSON the CLI's --json prints (docs/cli-json.md) as text, which zkdv.provenance
// turns into dataclasses. No torch header: this half works on files and tapes only.

#include "provenance_binding.h"

#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "zkdv/provenance/dataset_commitment_file.h"
#include "zkdv/provenance/model_checkpoint.h"
#include "zkdv/provenance/provenance_json.h"
#include "zkdv/provenance/weight_match.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace py = pybind11;

namespace zkdv::python {

namespace {

// Runs `work` without the GIL (hashing and matching take long and touch no Python object)
// and raises what the core throws as the Python exception that says the same: OSError for a
// file that cannot be read or written, ValueError for input the core refuses, both with the
// core's message.
template <typename Work>
std::string released(Work work)
{
    std::string text;
    std::optional<std::pair<PyObject*, std::string>> raised;
    {
        py::gil_scoped_release unlocked;
        try {
            text = toJsonText(work());
        } catch (const IoError& error) {
            raised.emplace(PyExc_OSError, error.what());
        } catch (const Error& error) {
            raised.emplace(PyExc_ValueError, error.what());
        }
    }
    if (raised) {
        PyErr_SetString(raised->first, raised->second.c_str());
        throw py::error_already_set();
    }
    return text;
}

}  // namespace

void bindProvenance(py::module_& module)
{
    module.doc() = "Dataset commitments and weight matching, as zkdv-audit dataset and match-weights run them";
    module.def(
        "commit_dataset",
        [](const std::vector<std::string>& inputs, const std::string& output, bool overwrite, unsigned threads) {
            return released([&] { return datasetCommitmentJson(commitDataset(inputs, output, overwrite, nullptr, threads), output); });
        },
        py::arg("inputs"), py::arg("output"), py::arg("overwrite"), py::arg("threads"),
        "hashes the files (one folder: every file under it) and writes their commitment; returns its JSON");
    module.def(
        "verify_dataset",
        [](const std::string& commitment, const std::optional<std::string>& folder, bool ignoreExtra) {
            return released([&] { return datasetVerificationJson(verifyDataset(commitment, folder, ignoreExtra), commitment, folder.value_or("")); });
        },
        py::arg("commitment"), py::arg("folder"), py::arg("ignore_extra"), "checks a commitment's root and, given the folder, its files; returns the JSON");
    module.def(
        "match_weights",
        [](const std::string& tape, const std::string& model, std::optional<std::uint64_t> snapshot, bool final, bool requireBuffers) {
            return released([&] {
                WeightMatchRequest request;
                request.final = final;
                request.snapshot = snapshot.value_or(0);
                request.requireBuffers = requireBuffers;
                const std::unique_ptr<ModelCheckpoint> checkpoint = ModelCheckpoint::open(model);
                return weightMatchJson(matchWeights(tape, *checkpoint, request), tape, model, *checkpoint);
            });
        },
        py::arg("tape"), py::arg("model"), py::arg("snapshot"), py::arg("final"), py::arg("require_buffers"),
        "compares a safetensors model with a state the tape records; returns the JSON");
}

}  // namespace zkdv::python
