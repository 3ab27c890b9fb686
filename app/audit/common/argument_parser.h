#pragma once
// Command-line parsing for zkdv-audit's subcommands: flags, options with values,
// positional arguments and a generated --help text.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkdv::cli {

// A mistake in the command line; the message says which argument and why (exit code 2).
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ArgumentParser {
public:
    ArgumentParser(std::string usage, std::string description);

    void addFlag(const std::string& name, const std::string& help);
    void addOption(const std::string& name, const std::string& valueName, const std::string& help);
    // An option that may be given several times; values() has them all, in order.
    void addRepeatedOption(const std::string& name, const std::string& valueName, const std::string& help);
    // `-L VALUE` and `-LVALUE` as another spelling of the option `name` (report's and dataset
    // commit's -o FILE for --out FILE).
    void addShortAlias(char letter, const std::string& name);
    // Positionals are collected in order; at least `minimum` must be given.
    void setPositionals(const std::string& name, const std::string& help, std::size_t minimum, bool many);

    // Parses argv[first..]. Returns false when --help was asked for (help() holds the text).
    bool parse(int argc, char** argv, int first);

    bool has(const std::string& name) const;
    std::string value(const std::string& name, const std::string& fallback = {}) const;
    std::uint64_t unsignedValue(const std::string& name, std::uint64_t fallback) const;
    // A number within [minimum, maximum].
    double doubleValue(const std::string& name, double fallback, double minimum, double maximum) const;
    std::vector<std::string> values(const std::string& name) const;
    const std::vector<std::string>& positionals() const { return positionals_; }
    std::string help() const;

private:
    struct Option {
        std::string valueName;  // empty for a flag
        std::string help;
        bool repeated = false;
    };
    std::string usage_;
    std::string description_;
    std::vector<std::string> order_;
    std::map<std::string, Option> options_;
    std::map<char, std::string> shortAliases_;
    std::string positionalName_;
    std::string positionalHelp_;
    std::size_t minimumPositionals_ = 0;
    bool manyPositionals_ = false;
    std::map<std::string, std::string> values_;
    std::map<std::string, std::vector<std::string>> repeatedValues_;
    std::vector<std::string> positionals_;
};

}  // namespace zkdv::cli
