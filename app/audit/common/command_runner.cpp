#include "command_runner.h"

#include <cstdio>
#include <exception>

#include "exit_codes.h"
#include "zkdv/util/progress.h"

namespace zkdv::cli {

int runCommand(const char* name, ArgumentParser& parser, int argc, char** argv, const std::function<int()>& body)
{
    try {
        if (!parser.parse(argc, argv, 2)) {
            std::fputs(parser.help().c_str(), stdout);
            return kExitOk;
        }
    } catch (const UsageError& error) {
        std::fprintf(stderr, "zkdv-audit %s: %s\n\n%s", name, error.what(), parser.help().c_str());
        return kExitUsage;
    }
    try {
        return body();
    } catch (const UsageError& error) {
        std::fprintf(stderr, "zkdv-audit %s: %s\n", name, error.what());
        return kExitUsage;
    } catch (const OperationCancelled&) {
        std::fprintf(stderr, "zkdv-audit %s: cancelled\n", name);
        return kExitUsage;
    } catch (const std::exception& error) {
        // Unreadable input: a missing file, not a tape, not a case, a case too new.
        std::fprintf(stderr, "zkdv-audit %s: %s\n", name, error.what());
        return kExitUsage;
    }
}

}  // namespace zkdv::cli
