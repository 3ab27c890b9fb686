// Fuzz target for the tape reader: any bytes may be refused or reported damaged, none may
// crash or escape as an unexpected exception. The bytes are scanned in memory through the
// same scanner that reads files (scanTapeBytes), so no input goes through a file.
// See docs/fuzzing.md for how it is built and run.

#include <cstddef>
#include <cstdint>

#include "zkdv/tape/dataset_samples.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_scanner.h"

namespace {

// Touches what a real consumer touches, so out-of-range views show up under ASan.
struct TouchingVisitor : zkdv::TapeVisitor {
    std::uint64_t sum = 0;
    void onRoot(const zkdv::RootRecord& root, const zkdv::RecordLocation&) override
    {
        sum += root.metadataJson.size() + root.parameters.size();
        root_ = root;
    }
    void onTransaction(const zkdv::TransactionRecord& t, const zkdv::RecordLocation&) override
    {
        sum += t.index + static_cast<std::uint64_t>(t.loss);
        for (const zkdv::TensorView* b : t.batch)
            for (std::uint8_t byte : b->data)
                sum += byte;
        // The replay's check of a bound batch reads every row and splits the proofs.
        if (const std::optional<std::string> problem = zkdv::batchSampleProblem(t, root_))
            sum += problem->size();
    }
    void onSnapshot(const zkdv::SnapshotRecord& s, const zkdv::RecordLocation&) override
    {
        for (const zkdv::TensorView* p : s.parameters)
            sum += p->data.size;
    }
    void onSeal(const zkdv::SealRecord& seal, const zkdv::RecordLocation&) override { sum += seal.signatureJson.size(); }
    zkdv::RootRecord root_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    TouchingVisitor visitor;
    zkdv::ScanOptions options;
    options.hashThreads = 1;
    options.computeFileSha256 = size % 2 == 0;
    try {
        // An empty file maps to no bytes at all, a null pointer; libFuzzer never passes one.
        const zkdv::ByteSpan bytes = size == 0 ? zkdv::ByteSpan() : zkdv::ByteSpan(data, size);
        const zkdv::TapeSummary summary = zkdv::scanTapeBytes(bytes, "fuzz input", &visitor, options);
        const bool whole = summary.status == zkdv::TapeStatus::Sealed || summary.status == zkdv::TapeStatus::Unsealed;
        if (whole == summary.problem.has_value())
            __builtin_trap();
        if (summary.validBytes > size || (summary.problem && summary.problem->byteOffset > size))
            __builtin_trap();
    } catch (const zkdv::NotATapeError&) {
    }
    return 0;
}
