#pragma once
// Opening a case to read it: CaseStore's read-only open (which migrates a case from an older
// build once), saying on stderr when it did, since the file changed.

#include <memory>
#include <string>

#include "zkdv/store/case_store.h"

namespace zkdv::cli {

std::unique_ptr<CaseStore> openCaseForReading(const std::string& path);

}  // namespace zkdv::cli
