// Fuzz target for the tape reader: any bytes may be refused or reported damaged, none may
// crash or escape as an unexpected exception.
//
// Built with -DZKDV_LIBFUZZER and -fsanitize=fuzzer it is a libFuzzer target; otherwise it
// replays the files named on its command line.

#include <unistd.h>

#include <cstdio>
#include <cstdint>
#include <string>

#include "zkdv/tape/tape_scanner.h"

namespace {
// The reader maps files, so each input goes through one scratch file.
const std::string& scratchPath()
{
    static const std::string path = "/tmp/zkdv-fuzz-tape-" + std::to_string(getpid()) + ".zkdv";
    return path;
}

// Touches what a real consumer touches, so out-of-range views show up under ASan.
struct TouchingVisitor : zkdv::TapeVisitor {
    std::uint64_t sum = 0;
    void onTransaction(const zkdv::TransactionRecord& t, const zkdv::RecordLocation&) override
    {
        sum += t.index + static_cast<std::uint64_t>(t.loss);
        for (const zkdv::TensorView* b : t.batch)
            for (std::uint8_t byte : b->data)
                sum += byte;
    }
    void onSnapshot(const zkdv::SnapshotRecord& s, const zkdv::RecordLocation&) override
    {
        for (const zkdv::TensorView* p : s.parameters)
            sum += p->data.size;
    }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::FILE* file = std::fopen(scratchPath().c_str(), "wb");
    if (!file)
        return 0;
    std::fwrite(data, 1, size, file);
    std::fclose(file);
    TouchingVisitor visitor;
    zkdv::ScanOptions options;
    options.hashThreads = 1;
    options.computeFileSha256 = size % 2 == 0;
    try {
        zkdv::TapeSummary summary = zkdv::scanTape(scratchPath(), &visitor, options);
        if (summary.status == zkdv::TapeStatus::Sealed && summary.problem)
            __builtin_trap();
        if (summary.status != zkdv::TapeStatus::Sealed && summary.status != zkdv::TapeStatus::Unsealed && !summary.problem)
            __builtin_trap();
    } catch (const zkdv::NotATapeError&) {
    }
    return 0;
}

#ifndef ZKDV_LIBFUZZER

#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

int main(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        std::ifstream in(argv[i], std::ios::binary);
        if (!in) {
            std::cerr << "fuzz_tape: cannot open " << argv[i] << '\n';
            return 1;
        }
        const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    }
    std::remove(scratchPath().c_str());
    std::cout << "fuzz_tape: ran " << (argc - 1) << " input(s)\n";
    return 0;
}

#endif
