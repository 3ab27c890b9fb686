#include "zkdv/optim/torch_release.h"

#include <algorithm>
#include <cctype>

#include "zkdv/tensor/torch_build.h"

namespace zkdv::optim {

namespace {

// Reads the decimal number at `text[position]`, advancing `position`; nullopt when none.
std::optional<int> readNumber(const std::string& text, std::size_t& position)
{
    const std::size_t start = position;
    int value = 0;
    while (position < text.size() && std::isdigit(static_cast<unsigned char>(text[position])) && position - start < 6)
        value = value * 10 + (text[position++] - '0');
    if (position == start)
        return std::nullopt;
    return value;
}

}  // namespace

std::optional<TorchRelease> TorchRelease::parse(const std::string& version)
{
    std::size_t position = 0;
    auto major = readNumber(version, position);
    if (!major || position >= version.size() || version[position] != '.')
        return std::nullopt;
    ++position;
    auto minor = readNumber(version, position);
    if (!minor)
        return std::nullopt;
    // What follows the minor version is a patch number or a local/pre-release label.
    if (position < version.size() && version[position] != '.' && version[position] != '+' && version[position] != 'a' &&
        version[position] != 'b' && version[position] != 'r' && version[position] != 'd')
        return std::nullopt;
    return TorchRelease{*major, *minor};
}

TorchRelease TorchRelease::ofThisLibtorch()
{
    static const TorchRelease release = parse(libtorchVersion()).value_or(TorchRelease{});
    return release;
}

std::string TorchRelease::text() const { return std::to_string(major) + "." + std::to_string(minor); }

const std::vector<TorchRelease>& provenTorchReleases()
{
    // Debian 12's libtorch and the PyPI lane's pin (packaging/pypi-torch.txt).
    static const std::vector<TorchRelease> releases = {{1, 13}, {2, 15}};
    return releases;
}

bool isProvenTorchRelease(const TorchRelease& release)
{
    const auto& proven = provenTorchReleases();
    return std::find(proven.begin(), proven.end(), release) != proven.end();
}

std::string provenTorchReleasesText()
{
    std::string text = "torch ";
    const auto& proven = provenTorchReleases();
    for (std::size_t i = 0; i < proven.size(); ++i)
        text += (i == 0 ? "" : i + 1 == proven.size() ? " and " : ", ") + proven[i].text();
    return text;
}

}  // namespace zkdv::optim
