#pragma once
// This process's determinism profile (docs/replay.md, "Determinism profile"): reading it,
// putting one in force, and the names of the CUDA devices, without exposing torch types.

#include <string>
#include <vector>

#include "zkdv/tape/determinism_profile.h"

namespace zkdv {

// The settings in force now, for a step on `device` ("cpu", "cuda:0"). The optimizer's
// resolution is not torch's global state: the recorder fills it in.
DeterminismProfile currentDeterminismProfile(const std::string& device);

// Puts `profile`'s switches in force (deterministic algorithms, cuDNN, TF32, matmul precision
// and reductions, attention backends, CUBLAS_WORKSPACE_CONFIG); the device, versions and
// threads are not settings. cuBLAS reads its workspace setting when it first runs, so this
// must come before any CUDA work to hold for it.
void applyDeterminismProfile(const DeterminismProfile& profile);

// torch's deterministic settings for training on CUDA (the recorder's default there):
// deterministic algorithms (warn-only, so that an operation without a deterministic kernel
// still runs), cuDNN deterministic and not benchmarking, no TF32, matmul precision "highest",
// CUBLAS_WORKSPACE_CONFIG=:4096:8 unless set. Returns what it changed, in words ("" when
// everything already was so).
std::string applyDeterministicTraining();

// The names of the CUDA devices, by index ("NVIDIA H200"); empty without CUDA. Read from the
// CUDA driver, so that no CUDA header is needed to build this.
std::vector<std::string> cudaDeviceNames();

}  // namespace zkdv
