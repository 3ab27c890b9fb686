#pragma once
// Runs a subcommand body, turning usage mistakes and unreadable input into messages on
// stderr and exit code 2, so each command only handles its own outcomes.

#include <functional>

#include "argument_parser.h"

namespace zkdv::cli {

// Parses `parser` from argv[2..] (printing --help to stdout and returning 0 when asked),
// then runs `body`. UsageError, IoError, NotATapeError and other zkdv errors become exit 2.
int runCommand(const char* name, ArgumentParser& parser, int argc, char** argv, const std::function<int()>& body);

}  // namespace zkdv::cli
