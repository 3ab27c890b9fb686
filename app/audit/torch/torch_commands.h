#pragma once
// The subcommands that run libtorch, compiled into the zkdv-audit-torch module. Same
// contract as commands.h: arguments from argv[2..], the exit code back.

#include "exit_codes.h"

namespace zkdv::cli {

int runDemo(int argc, char** argv);

}  // namespace zkdv::cli
