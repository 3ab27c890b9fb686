// The entry point of the zkdv-audit-torch module (common/torch_module_entry.h).

#include "torch_module_entry.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <type_traits>

#include "torch_commands.h"

// The executable calls through ZkdvAuditTorchMain; a signature that drifted from it would
// only show as a crash.
static_assert(std::is_same_v<decltype(&zkdv_audit_torch_main), ZkdvAuditTorchMain>);

int zkdv_audit_torch_main(const char* command, int argc, char** argv)
{
    using namespace zkdv::cli;
    // The commands catch their own errors; this is the last line before the executable,
    // which cannot catch the module's types.
    try {
        if (std::strcmp(command, "demo") == 0)
            return runDemo(argc, argv);
        std::fprintf(stderr, "zkdv-audit: the libtorch module has no command \"%s\"\n", command);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "zkdv-audit %s: %s\n", command, error.what());
    } catch (...) {
        std::fprintf(stderr, "zkdv-audit %s: unexpected error\n", command);
    }
    return kExitUsage;
}
