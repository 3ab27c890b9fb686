#pragma once
// Points this process's zkdv settings (signing key, trusted keys) at a folder while it lives,
// so a test signs with a key of its own and trusts only what it chooses.

#include <cstdlib>
#include <string>

namespace zkdv::test {

class ConfigHome {
public:
    explicit ConfigHome(const std::string& folder)
    {
        if (const char* before = std::getenv("ZKDV_CONFIG_HOME"))
            previous_ = before, hadPrevious_ = true;
        ::setenv("ZKDV_CONFIG_HOME", folder.c_str(), 1);
    }
    ~ConfigHome()
    {
        if (hadPrevious_)
            ::setenv("ZKDV_CONFIG_HOME", previous_.c_str(), 1);
        else
            ::unsetenv("ZKDV_CONFIG_HOME");
    }
    ConfigHome(const ConfigHome&) = delete;
    ConfigHome& operator=(const ConfigHome&) = delete;

private:
    std::string previous_;
    bool hadPrevious_ = false;
};

}  // namespace zkdv::test
