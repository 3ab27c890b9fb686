#pragma once
// What a tape's root says about its optimizer options, in the words every report, run and
// window uses (spec 3.3): static, scheduled and checked against a named scheduler, or
// scheduled as recorded.

#include <string>

namespace zkdv {

struct RootRecord;

// "static: every optimizer option is the root's for the whole tape",
// "lr scheduled by StepLR, checked against its schedule at every replayed transaction",
// "lr as recorded, not checked against a schedule".
std::string scheduleStatement(const RootRecord& root);
// The kind of the root's scheduler ("StepLR"), or "" when there is none to check against.
std::string schedulerKind(const RootRecord& root);

}  // namespace zkdv
