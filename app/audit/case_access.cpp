#include "case_access.h"

#include <cstdio>

#include "zkdv/store/case_schema.h"

namespace zkdv::cli {

std::unique_ptr<CaseStore> openCaseForReading(const std::string& path)
{
    auto store = std::make_unique<CaseStore>(path, CaseStore::Access::ReadOnly);
    if (const std::optional<int> from = store->migratedFromVersion())
        std::fprintf(stderr, "upgraded %s from case schema %d to %d\n", path.c_str(), *from, CaseSchema::latestVersion());
    return store;
}

}  // namespace zkdv::cli
