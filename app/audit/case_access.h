#pragma once
// Opening a case to read it: read-only, except that a case from an older build is migrated
// once (forward only, in one transaction) so the current schema can be read.

#include <memory>
#include <string>

#include "zkdv/store/case_store.h"

namespace zkdv::cli {

std::unique_ptr<CaseStore> openCaseForReading(const std::string& path);

}  // namespace zkdv::cli
