#include "zkdv/tensor/torch_build.h"

#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <ATen/Parallel.h>
#include <ATen/Version.h>

namespace zkdv {

namespace {

std::string trimmed(std::string text)
{
    text.erase(0, std::min(text.find_first_not_of(" -"), text.size()));
    while (!text.empty() && (text.back() == ' ' || text.back() == ','))
        text.pop_back();
    return text;
}

// The BLAS library torch calls, when it is not compiled in: Debian's libtorch calls the
// system's libblas.so.3, an alternative (reference BLAS, OpenBLAS, BLIS…). Found among the
// loaded objects by name, not by symbol lookup: a Python process loads torch privately, so
// its symbols are in no global scope, and the answer must be the same in every process.
std::string loadedBlas()
{
    std::string found;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
            const std::string path = info->dlpi_name ? info->dlpi_name : "";
            const std::string name = path.substr(path.find_last_of('/') + 1);
            for (const char* prefix : {"libblas.so", "libopenblas", "libblis", "libflexiblas", "libmkl_rt"})
                if (name.rfind(prefix, 0) == 0) {
                    char* resolved = realpath(path.c_str(), nullptr);
                    const std::string real = resolved ? resolved : path;
                    std::free(resolved);
                    *static_cast<std::string*>(out) = real.substr(real.find_last_of('/') + 1);
                    return 1;
                }
            return 0;
        },
        &found);
    return found;
}

}  // namespace

NumericEnvironment numericEnvironment()
{
    NumericEnvironment environment = NumericEnvironment::hostCpu();
    // torch's own summary names the kernel level in use (ATEN_CPU_CAPABILITY caps it) and
    // the math libraries compiled in; both releases write these lines alike.
    std::istringstream config(at::show_config());
    std::string blasInfo;
    for (std::string line; std::getline(config, line);) {
        if (auto at = line.find("CPU capability usage:"); at != std::string::npos)
            environment.torchCpuCapability = trimmed(line.substr(at + sizeof("CPU capability usage:") - 1));
        else if (line.find("Math Kernel Library") != std::string::npos)
            environment.mkl = trimmed(line);
        else if (line.find("MKL-DNN") != std::string::npos || line.find("oneDNN") != std::string::npos)
            environment.onednn = trimmed(line);
        if (auto at = line.find("BLAS_INFO="); at != std::string::npos)
            blasInfo = line.substr(at + sizeof("BLAS_INFO=") - 1, line.find(',', at) - at - (sizeof("BLAS_INFO=") - 1));
    }
    const std::string library = blasInfo == "mkl" ? std::string() : loadedBlas();
    environment.blas = blasInfo + (library.empty() ? "" : " (" + library + ")");
    environment.intraOpThreads = at::get_num_threads();
    for (const std::string& name : NumericEnvironment::settingNames())
        if (const char* value = std::getenv(name.c_str()))
            environment.settings.emplace(name, value);
    return environment;
}

}  // namespace zkdv
