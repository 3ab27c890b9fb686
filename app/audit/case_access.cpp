#include "case_access.h"

#include <cstdio>

#include "zkdv/store/case_schema.h"

namespace zkdv::cli {

std::unique_ptr<CaseStore> openCaseForReading(const std::string& path)
{
    try {
        return std::make_unique<CaseStore>(path, CaseStore::Access::ReadOnly);
    } catch (const SchemaUpgradeNeeded&) {
        std::fprintf(stderr, "upgrading %s to case schema %d\n", path.c_str(), CaseSchema::latestVersion());
        return std::make_unique<CaseStore>(path, CaseStore::Access::ReadWrite);
    }
}

}  // namespace zkdv::cli
