#include "zkdv/store/tape_location.h"

#include <filesystem>
#include <system_error>

#include "zkdv/store/database.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/utf8.h"

namespace zkdv {

std::string tapeFileProblem(const CaseTape& tape)
{
    if (tape.embedded)
        return {};
    // The path comes from the case: said in valid UTF-8 whatever bytes it holds.
    const std::string shown = toValidUtf8(tape.path);
    const std::string which = "tape " + std::to_string(tape.id);
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(tape.path, error);
    if (!std::filesystem::exists(status))
        return which + " is no longer at " + shown + (error ? " (" + error.message() + ")" : std::string()) + "; locate it";
    if (std::filesystem::is_fifo(status))
        return which + " at " + shown + " is a FIFO, not a regular file; locate the tape file";
    if (!std::filesystem::is_regular_file(status))
        return which + " at " + shown + " is not a regular file; locate the tape file";
    const std::uintmax_t size = std::filesystem::file_size(tape.path, error);
    if (error)
        return which + " at " + shown + " cannot be read (" + error.message() + "); locate it";
    if (size != tape.size)
        return which + " at " + shown + " has " + std::to_string(size) + " bytes, not the " + std::to_string(tape.size) +
               " it had when ingested: it was changed or replaced; locate the original";
    return {};
}

std::vector<CaseTape> misplacedTapes(CaseStore& store)
{
    std::vector<CaseTape> misplaced;
    for (CaseTape& tape : store.tapes())
        if (!tapeFileProblem(tape).empty())
            misplaced.push_back(std::move(tape));
    return misplaced;
}

void relocateTape(CaseStore& store, std::int64_t tapeId, const std::string& newPath, ProgressSink* progress)
{
    const std::optional<CaseTape> tape = store.tape(tapeId);
    if (!tape)
        throw Error("case " + store.path() + " holds no tape " + std::to_string(tapeId));
    ScanOptions options;
    options.progress = progress;
    const TapeSummary summary = scanTape(newPath, nullptr, options);
    const std::string chainHead = toHex(summary.chainHead);
    if (summary.fileSize != tape->size || chainHead != tape->chainHead)
        throw Error(newPath + " is not tape " + std::to_string(tapeId) + " of the case: its chain head " + chainHead + " and size " +
                    std::to_string(summary.fileSize) + " differ from the tape's " + tape->chainHead + " and " +
                    std::to_string(tape->size) + " bytes" +
                    (summary.problem ? " (" + summary.problem->describe() + ")" : std::string()) + "; the case is unchanged");
    const std::string absolute = std::filesystem::absolute(newPath).lexically_normal().string();
    SqlTransaction transaction(store.database());
    Statement update = store.database().prepare("UPDATE tapes SET path = ?1 WHERE id = ?2");
    update.bind(1, absolute).bind(2, tapeId).run();
    transaction.commit();
}

}  // namespace zkdv
