// The main of every fuzz target built without libFuzzer (ZKDV_FUZZ off): runs the target
// once on each file named on the command line, and on every file below each folder named,
// in name order, the way libFuzzer replays a corpus. Arguments starting with '-' are
// libFuzzer's options and are ignored, so one command line serves both builds. A crash
// shows as a crash; finding no input at all fails, so a misspelt corpus path cannot pass.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool runFile(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return false;
    }
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    return true;
}

}  // namespace

int main(int argc, char** argv)
{
    std::size_t ran = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        if (argument.rfind('-', 0) == 0)
            continue;
        std::error_code error;
        if (std::filesystem::is_directory(argument, error)) {
            std::vector<std::filesystem::path> files;
            for (const auto& entry : std::filesystem::recursive_directory_iterator(argument, error))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
            if (error) {
                std::fprintf(stderr, "cannot list %s: %s\n", argument.c_str(), error.message().c_str());
                return 1;
            }
            std::sort(files.begin(), files.end());
            for (const auto& file : files) {
                if (!runFile(file))
                    return 1;
                ++ran;
            }
        } else {
            if (!runFile(argument))
                return 1;
            ++ran;
        }
    }
    if (ran == 0) {
        std::fprintf(stderr, "%s: no inputs (name files or folders of them)\n", argc > 0 ? argv[0] : "fuzz target");
        return 1;
    }
    std::printf("%s: ran %zu input(s)\n", argv[0], ran);
    return 0;
}
