// Fuzz target for SafetensorsView::parse: any input may be refused, none may crash.
//
// Built with -DZKDV_LIBFUZZER and -fsanitize=fuzzer it is a libFuzzer target; otherwise it
// is a plain program that replays the files named on its command line (a corpus or a
// crash reproducer).

#include <cstddef>
#include <cstdint>

#include "zkdv/tape/safetensors.h"
#include "zkdv/util/error.h"

namespace {
// Keeps the checksum loop from being optimised away.
volatile std::uint64_t g_sink = 0;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    try {
        const zkdv::SafetensorsView view = zkdv::SafetensorsView::parse(zkdv::ByteSpan(data, size));
        // Touch every accessor so that a view pointing outside the input shows up under ASan.
        std::uint64_t checksum = 0;
        for (const zkdv::TensorView& tensor : view.tensors()) {
            checksum += static_cast<std::uint64_t>(tensor.elementCount());
            for (std::uint8_t byte : tensor.data)
                checksum += byte;
            if (view.find(tensor.name) == nullptr)
                __builtin_trap();
        }
        for (const auto& [key, value] : view.metadata())
            checksum += view.metadataValue(key).size() + value.size();
        g_sink = g_sink + checksum;
    } catch (const zkdv::FormatError&) {
        // Refusing malformed input is the expected outcome.
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
        std::ifstream file(argv[i], std::ios::binary);
        if (!file) {
            std::cerr << "fuzz_safetensors: cannot open " << argv[i] << '\n';
            return 1;
        }
        const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    }
    std::cout << "fuzz_safetensors: ran " << (argc - 1) << " input(s)\n";
    return 0;
}

#endif
