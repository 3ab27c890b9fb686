#pragma once
// One word of a POSIX shell command line, for the commands that reports print and the job
// scripts zkdv-audit writes (workflow/cluster_job.h): one quoting routine for all of them.

#include <string>
#include <string_view>

namespace zkdv {

// `word` as the shell reads it back unchanged: as it is when it holds only characters no shell
// treats specially, otherwise in single quotes with each ' written '\''.
std::string shellWord(std::string_view word);

}  // namespace zkdv
