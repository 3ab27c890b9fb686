#include "torch_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "exit_codes.h"
#include "torch_module_entry.h"

// Set by app/audit/CMakeLists.txt: the module's file name, and the directory it is installed
// in relative to the installed executable's directory; a build without libtorch has none.
#ifndef ZKDV_WITHOUT_TORCH
#ifndef ZKDV_AUDIT_TORCH_MODULE_NAME
#error "ZKDV_AUDIT_TORCH_MODULE_NAME is not defined"
#endif
#ifndef ZKDV_AUDIT_TORCH_MODULE_INSTALL_DIR
#error "ZKDV_AUDIT_TORCH_MODULE_INSTALL_DIR is not defined"
#endif
#endif

namespace zkdv::cli {

bool builtWithoutTorch()
{
#ifdef ZKDV_WITHOUT_TORCH
    return true;
#else
    return false;
#endif
}

int refuseWithoutTorch(const char* command)
{
    std::fprintf(stderr, "zkdv-audit %s: this zkdv-audit was built without libtorch (ZKDV_WITH_TORCH=OFF), which %s; "
                         "verify, info, ingest and report work without it\n",
                 command, std::strcmp(command, "replay") == 0 ? "its replay workers run on" : "the command runs on");
    return kExitUsage;
}

#ifdef ZKDV_WITHOUT_TORCH

bool isTorchCommand(const char* command) { return std::strcmp(command, "demo") == 0; }

int runTorchCommand(const char* command, int, char**) { return refuseWithoutTorch(command); }

#else

namespace {

// The directory of the running executable with symlinks resolved, so that an installed tree
// finds its module wherever it was put. Empty, with errno set, when /proc cannot say.
std::string executableDirectory()
{
    char path[PATH_MAX];
    const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0)
        return {};
    const std::string executable(path, static_cast<std::size_t>(length));
    return executable.substr(0, executable.find_last_of('/'));
}

// The build tree writes the module beside the executable; an installation puts it under
// LIBDIR/zkdv, found relative to the executable so that the tree can be relocated.
std::vector<std::string> moduleCandidates(const std::string& directory)
{
    return {directory + "/" ZKDV_AUDIT_TORCH_MODULE_NAME,
            directory + "/" ZKDV_AUDIT_TORCH_MODULE_INSTALL_DIR "/" ZKDV_AUDIT_TORCH_MODULE_NAME};
}

}  // namespace

bool isTorchCommand(const char* command) { return std::strcmp(command, "demo") == 0; }

int runTorchCommand(const char* command, int argc, char** argv)
{
    const std::string directory = executableDirectory();
    if (directory.empty()) {
        std::fprintf(stderr, "zkdv-audit %s: cannot locate the libtorch module " ZKDV_AUDIT_TORCH_MODULE_NAME
                             ": reading /proc/self/exe failed (%s)\n",
                     command, std::strerror(errno));
        return kExitUsage;
    }
    const std::vector<std::string> candidates = moduleCandidates(directory);
    for (const std::string& path : candidates) {
        if (access(path.c_str(), F_OK) != 0)
            continue;
        // RTLD_LOCAL keeps the module's own copy of zkdv out of the global namespace, and
        // RTLD_NOW makes a missing libtorch fail here, with its name, not halfway through.
        void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!module) {
            std::fprintf(stderr, "zkdv-audit %s: cannot load the libtorch module %s: %s\n", command, path.c_str(), dlerror());
            return kExitUsage;
        }
        auto entry = reinterpret_cast<ZkdvAuditTorchMain>(dlsym(module, ZKDV_AUDIT_TORCH_ENTRY));
        if (!entry) {
            std::fprintf(stderr, "zkdv-audit %s: %s is not the libtorch module of this zkdv-audit: %s\n", command, path.c_str(), dlerror());
            return kExitUsage;
        }
        // Never closed: libtorch does not support being unloaded, and the process ends with
        // the command anyway.
        return entry(command, argc, argv);
    }
    std::string tried;
    for (const std::string& path : candidates)
        tried += "\n  " + path;
    std::fprintf(stderr, "zkdv-audit %s: the libtorch module " ZKDV_AUDIT_TORCH_MODULE_NAME
                         " that runs this command is not installed; looked for:%s\n",
                 command, tried.c_str());
    return kExitUsage;
}

#endif  // ZKDV_WITHOUT_TORCH

}  // namespace zkdv::cli
