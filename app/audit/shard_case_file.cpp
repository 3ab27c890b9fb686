#include "shard_case_file.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "command_runner.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/shard_case.h"

namespace zkdv::cli {

namespace {

bool exists(const std::string& path)
{
    std::error_code error;
    return std::filesystem::exists(std::filesystem::symlink_status(path, error));
}

void removeCaseFile(const std::string& path)
{
    std::error_code error;
    for (const char* suffix : {"", "-journal", "-wal", "-shm"})
        std::filesystem::remove(path + suffix, error);
}

}  // namespace

ShardCase::ShardCase(const std::string& casePath, const std::string& into, ReplayRequest& request)
    : into_(into), partial_(into + ".partial")
{
    if (exists(into_))
        throw UsageError("--into " + into_ + " exists already; a shard's results are never written over: remove it, or give another file");
    // What an earlier try of this shard left when it was killed: never a finished shard.
    removeCaseFile(partial_);
    CaseStore source(casePath, CaseStore::Access::ReadOnly);
    if (request.tapeId == 0) {
        const std::vector<CaseTape> tapes = source.tapes();
        if (tapes.size() != 1)
            throw UsageError("case " + casePath + " holds " + std::to_string(tapes.size()) + " tapes; name the one to replay with --tape ID");
        request.tapeId = tapes.front().id;
    }
    writeShardCase(source, request.tapeId, partial_);
    if (request.workerLogPath.empty())
        request.workerLogPath = into_ + ".replay.log";
}

ShardCase::~ShardCase()
{
    if (!kept_)
        removeCaseFile(partial_);
}

void ShardCase::keep()
{
    if (exists(into_))
        throw Error("the shard's run is in " + partial_ + ": " + into_ + " appeared while it replayed, and is not written over");
    trimShardCase(partial_);
    std::error_code error;
    std::filesystem::rename(partial_, into_, error);
    if (error)
        throw Error("the shard's run is in " + partial_ + ", which cannot be renamed " + into_ + ": " + error.message());
    kept_ = true;
}

}  // namespace zkdv::cli
