#pragma once
// The sealed program: a TorchScript module whose training_step(batch) returns the loss,
// checked against the convention of docs/tape-format.md section 4 and serialized.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>

#include "zkdv/util/error.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

// A module that breaks the sealed-program convention; the message says what to do.
class ProgramError : public Error {
public:
    using Error::Error;
};

// The one check of a TorchScript program, at sealing and at replay load (docs/tape-format.md
// section 4.1). Throws ProgramError when `module` has no training_step(List[Tensor]) -> Tensor,
// holds tensors that are not its parameters or buffers (in any attribute, container or
// submodule) or values no check can read, calls a random operation (forked code included), or
// writes in place into a parameter, the batch, a constant or a container it keeps.
void checkSealedProgram(const torch::jit::Module& module);

struct SealedProgram {
    std::vector<std::uint8_t> bytes;  // the TorchScript archive
    Digest sha256{};
};

// Checks and serializes the module.
SealedProgram sealProgram(const torch::jit::Module& module);
// Loads a sealed program's bytes back (on `device`).
torch::jit::Module loadSealedProgram(const std::vector<std::uint8_t>& bytes, const std::string& device = "cpu");

// Runs training_step(batch) as recorder and replay both must: with the graph executor's
// optimizations off, so that every run executes the same operators with their eager autograd
// formulas. Optimized, the executor runs its first calls unoptimized and later ones as
// differentiated subgraphs; a replay starting a segment afresh would then not run the code
// the recorder ran at that transaction, and those subgraphs make the backward ~20 % slower.
at::Tensor runTrainingStep(torch::jit::Module& module, const c10::List<at::Tensor>& batch);

}  // namespace zkdv
