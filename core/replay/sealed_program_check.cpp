#include "sealed_program_check.h"

#include "zkdv/graph/exported_graph.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/tape/record_frame.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv {

namespace {

std::vector<std::uint8_t> readProgramFile(const std::string& path)
{
    try {
        const MappedFile file(path);  // refuses FIFOs and devices instead of waiting on them
        return std::vector<std::uint8_t>(file.bytes().begin(), file.bytes().end());
    } catch (const IoError& error) {
        throw ReplayError(std::string("cannot read program file: ") + error.what());
    }
}

}  // namespace

CheckedProgram checkSealedProgram(ReplayStore& store, const RootRecord& root, const std::string& programPath)
{
    CheckedProgram checked;
    const std::string committed = toHex(root.programSha256);
    if (root.programKind != "torchscript" && root.programKind != kExportedGraphKind) {
        checked.check = ProgramCheck::NotReplayable;
        checked.problem = "the tape's program is of kind '" + root.programKind + "', which cannot be replayed";
        return checked;
    }
    std::optional<std::vector<std::uint8_t>> bytes;
    if (!programPath.empty())
        bytes = readProgramFile(programPath);
    else
        bytes = store.programBytes(committed);
    if (!bytes) {
        checked.check = ProgramCheck::Missing;
        checked.problem = "the sealed program (sha256 " + committed +
                          ") is not in the case; add it with `zkdv-audit ingest PROGRAM --case CASE` or pass --program PROGRAM";
        return checked;
    }
    const std::string found = toHex(Sha256::of(ByteSpan(*bytes)));
    if (found != committed) {
        checked.check = ProgramCheck::Mismatched;
        checked.problem = "program digest mismatch: the tape commits to sha256 " + committed + ", the program supplied has " + found +
                          "; refusing to run it";
        return checked;
    }
    checked.bytes = std::move(*bytes);
    return checked;
}

Digest digestBeforeFirstSnapshot(const CaseTape& tape, const RootRecord& root, const std::vector<std::uint8_t>& program)
{
    Sha256 hasher;
    const ByteSpan rootPayload(std::string_view(tape.rootJson));
    const Digest rootDigest = frameDigest(
        frameHeader(static_cast<std::uint32_t>(tape::RecordType::Root), tape::kFlagCritical, rootPayload.size,
                    genesisDigest(static_cast<std::uint16_t>(root.formatMajor), static_cast<std::uint16_t>(root.formatMinor))),
        {rootPayload}, hasher);
    if (!root.programEmbedded)
        return rootDigest;
    return frameDigest(frameHeader(static_cast<std::uint32_t>(tape::RecordType::Program), tape::kFlagCritical, program.size(), rootDigest),
                       {ByteSpan(program)}, hasher);
}

std::string chooseRecordSource(const CaseTape& tape, bool& embedded)
{
    std::string why;
    try {
        RecordReader reader(tape.path);
        embedded = false;
        if (reader.size() == tape.size)
            return "";
        why = "the tape file " + tape.path + " has " + std::to_string(reader.size()) + " bytes, the ingested tape " + std::to_string(tape.size);
    } catch (const Error& error) {
        why = error.what();
    }
    embedded = tape.embedded;
    return embedded ? "" : "the tape's records cannot be read: " + why + "; restore the file, or ingest it with --embed";
}

}  // namespace zkdv
