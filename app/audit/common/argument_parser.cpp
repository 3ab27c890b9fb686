#include "argument_parser.h"

#include <charconv>

namespace zkdv::cli {

ArgumentParser::ArgumentParser(std::string usage, std::string description)
    : usage_(std::move(usage)), description_(std::move(description))
{
    addFlag("help", "show this help and exit");
}

void ArgumentParser::addFlag(const std::string& name, const std::string& help)
{
    order_.push_back(name);
    options_[name] = Option{{}, help};
}

void ArgumentParser::addOption(const std::string& name, const std::string& valueName, const std::string& help)
{
    order_.push_back(name);
    options_[name] = Option{valueName, help};
}

void ArgumentParser::addRepeatedOption(const std::string& name, const std::string& valueName, const std::string& help)
{
    addOption(name, valueName, help);
    options_[name].repeated = true;
}

void ArgumentParser::setPositionals(const std::string& name, const std::string& help, std::size_t minimum, bool many)
{
    positionalName_ = name;
    positionalHelp_ = help;
    minimumPositionals_ = minimum;
    manyPositionals_ = many;
}

void ArgumentParser::addShortAlias(char letter, const std::string& name)
{
    shortAliases_[letter] = name;
}

bool ArgumentParser::parse(int argc, char** argv, int first)
{
    bool optionsEnded = false;
    for (int i = first; i < argc; ++i) {
        std::string argument = argv[i];
        if (!optionsEnded && argument == "--") {
            optionsEnded = true;
            continue;
        }
        if (!optionsEnded && argument.size() > 2 && argument.compare(0, 2, "--") == 0) {
            std::string name = argument.substr(2);
            std::string inlineValue;
            bool hasInlineValue = false;
            if (auto equals = name.find('='); equals != std::string::npos) {
                inlineValue = name.substr(equals + 1);
                name = name.substr(0, equals);
                hasInlineValue = true;
            }
            auto option = options_.find(name);
            if (option == options_.end())
                throw UsageError("unknown option --" + name);
            if (name == "help")
                return false;
            if (option->second.valueName.empty()) {
                if (hasInlineValue)
                    throw UsageError("--" + name + " takes no value");
                values_[name] = "1";
            } else if (hasInlineValue) {
                values_[name] = inlineValue;
            } else {
                if (i + 1 >= argc)
                    throw UsageError("--" + name + " needs a value (" + option->second.valueName + ")");
                values_[name] = argv[++i];
            }
            if (option->second.repeated)
                repeatedValues_[name].push_back(values_[name]);
            continue;
        }
        if (!optionsEnded && argument.size() > 1 && argument[0] == '-' && argument != "-") {
            if (argument == "-h")
                return false;
            if (auto alias = shortAliases_.find(argument[1]); alias != shortAliases_.end()) {
                if (argument.size() > 2) {
                    values_[alias->second] = argument.substr(2);
                } else {
                    if (i + 1 >= argc)
                        throw UsageError(argument + " needs a value (" + options_.at(alias->second).valueName + ")");
                    values_[alias->second] = argv[++i];
                }
                continue;
            }
            throw UsageError("unknown option " + argument);
        }
        if (positionalName_.empty() || (!manyPositionals_ && !positionals_.empty()))
            throw UsageError("unexpected argument \"" + argument + "\"");
        positionals_.push_back(argument);
    }
    if (positionals_.size() < minimumPositionals_)
        throw UsageError("missing " + positionalName_);
    return true;
}

std::vector<std::string> ArgumentParser::values(const std::string& name) const
{
    auto it = repeatedValues_.find(name);
    return it == repeatedValues_.end() ? std::vector<std::string>() : it->second;
}

bool ArgumentParser::has(const std::string& name) const { return values_.count(name) != 0; }

std::string ArgumentParser::value(const std::string& name, const std::string& fallback) const
{
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

std::uint64_t ArgumentParser::unsignedValue(const std::string& name, std::uint64_t fallback) const
{
    auto it = values_.find(name);
    if (it == values_.end())
        return fallback;
    const std::string& text = it->second;
    std::uint64_t number = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
        throw UsageError("--" + name + " expects a non-negative integer, got \"" + text + "\"");
    return number;
}

double ArgumentParser::doubleValue(const std::string& name, double fallback, double minimum, double maximum) const
{
    auto it = values_.find(name);
    if (it == values_.end())
        return fallback;
    const std::string& text = it->second;
    std::size_t used = 0;
    double number = 0.0;
    try {
        number = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (text.empty() || used != text.size() || !(number >= minimum && number <= maximum))
        throw UsageError("--" + name + " expects a number in [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "], got \"" +
                         text + "\"");
    return number;
}

std::string ArgumentParser::help() const
{
    std::string text = "usage: " + usage_ + "\n\n" + description_ + "\n";
    if (!positionalName_.empty())
        text += "\n  " + positionalName_ + std::string(positionalName_.size() < 22 ? 22 - positionalName_.size() : 1, ' ') + positionalHelp_ + "\n";
    text += "\noptions:\n";
    for (const std::string& name : order_) {
        const Option& option = options_.at(name);
        std::string left = "--" + name + (option.valueName.empty() ? "" : " " + option.valueName);
        text += "  " + left + std::string(left.size() < 22 ? 22 - left.size() : 1, ' ') + option.help + "\n";
    }
    return text;
}

}  // namespace zkdv::cli
