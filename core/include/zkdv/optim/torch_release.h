#pragma once
// The torch release whose optimizer arithmetic a contract reproduces. torch.optim's update
// rules and options changed between releases (Adam's first moment became a lerp in 2.x, new
// options appeared), and a tape's root names the torch that recorded it, so a replay follows
// that release's arithmetic, not the replaying libtorch's (docs/compatibility.md). No torch
// types: the audit side names releases too.

#include <optional>
#include <string>
#include <vector>

namespace zkdv::optim {

struct TorchRelease {
    int major = 0;
    int minor = 0;

    // "2.15.0+cu132", "1.13.1", "2.15.0a0+git1234" -> {2, 15}; nullopt for anything else.
    static std::optional<TorchRelease> parse(const std::string& version);
    // The release of the libtorch this program links.
    static TorchRelease ofThisLibtorch();

    bool atLeast(int otherMajor, int otherMinor) const
    {
        return major > otherMajor || (major == otherMajor && minor >= otherMinor);
    }
    bool operator==(const TorchRelease& other) const { return major == other.major && minor == other.minor; }
    bool operator!=(const TorchRelease& other) const { return !(*this == other); }
    std::string text() const;  // "2.15"
};

// The releases whose torch.optim the built-in contracts reproduce bit for bit, each proven by
// the oracle test against that release's own torch (one per build lane).
const std::vector<TorchRelease>& provenTorchReleases();
bool isProvenTorchRelease(const TorchRelease& release);
// "torch 1.13 and 2.15"
std::string provenTorchReleasesText();

}  // namespace zkdv::optim
