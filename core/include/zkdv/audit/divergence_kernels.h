#pragma once
// Which instruction-set variant of the divergence kernels this process runs (the tests
// assert it; every variant computes the same bits).

namespace zkdv {

// "avx2" on an x86-64 CPU with AVX2, otherwise (or with ZKDV_CPU_CAPABILITY=default) "baseline".
const char* divergenceKernels();

}  // namespace zkdv
