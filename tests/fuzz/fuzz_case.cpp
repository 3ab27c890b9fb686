// Fuzz target for opening a case file handed over by someone else: the bytes are written to a
// scratch file (SQLite reads cases by path), opened read-only the way every command opens a
// case (CaseStore: defensive connection, schema check, run recovery), and read the way
// `info` and `report` read it. Any bytes may be refused with a zkdv::Error; none may crash,
// hang or escape as another exception. See docs/fuzzing.md for how it is built and run.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/util/error.h"

namespace {

// One scratch file per fuzzing process, in memory where the system has /dev/shm.
const std::string& scratchPath()
{
    static const std::string path = [] {
        const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
        return std::string(dir) + "/zkdv-fuzz-case-" + std::to_string(::getpid()) + ".zkaudit";
    }();
    return path;
}

void removeScratch()
{
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        std::remove((scratchPath() + suffix).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    removeScratch();
    if (std::FILE* file = std::fopen(scratchPath().c_str(), "wb")) {
        const bool written = size == 0 || std::fwrite(data, 1, size, file) == size;
        std::fclose(file);
        if (!written)
            return 0;
    } else {
        return 0;
    }
    try {
        zkdv::CaseStore store(scratchPath(), zkdv::CaseStore::Access::ReadOnly);
        std::uint64_t sum = 0;
        for (const zkdv::CaseTape& tape : store.tapes())
            sum += tape.transactionCount + tape.path.size();
        for (const zkdv::StoredReplayRun& run : zkdv::ReplayStore(store.database()).runs())
            sum += run.problem.size();
        const zkdv::ReportData report = zkdv::buildAuditReport(store);
        sum += zkdv::renderReportJson(report).size();
        (void)sum;
    } catch (const zkdv::Error&) {
    }
    removeScratch();
    return 0;
}
