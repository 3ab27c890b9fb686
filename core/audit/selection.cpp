#include "zkdv/audit/selection.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_set>

#include "zkdv/util/sampling_generator.h"

namespace zkdv {
namespace {

using Uint128 = unsigned __int128;

constexpr const char* kAcceptedForms =
    "accepted forms: all, ids:N[,N...], range:FIRST-LAST, random:N, random:P%, stratified:N, stratified:P%, "
    "topq:N, topq:P%, sampled (N a positive integer, P a percentage in (0, 100] with at most 9 decimals)";
constexpr std::size_t kMaxPercentDecimals = 9;

[[noreturn]] void fail(const std::string& text, const std::string& problem)
{
    throw SelectionError("selection \"" + text + "\": " + problem + "; " + kAcceptedForms);
}

// A decimal integer, digits only, that fits 64 bits.
std::uint64_t parseInteger(const std::string& text, std::string_view digits, const char* what)
{
    if (digits.empty())
        fail(text, std::string("expected ") + what + ", found nothing");
    std::uint64_t value = 0;
    for (char c : digits) {
        if (c < '0' || c > '9')
            fail(text, std::string("expected ") + what + ", found \"" + std::string(digits) + "\"");
    }
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error == std::errc::result_out_of_range)
        fail(text, std::string(what) + " \"" + std::string(digits) + "\" is larger than 2^64 - 1");
    if (error != std::errc() || end != digits.data() + digits.size())
        fail(text, std::string("expected ") + what + ", found \"" + std::string(digits) + "\"");
    return value;
}

// The argument of random/stratified/topq: a positive count or a percentage in (0, 100].
void parseAmount(const std::string& text, std::string_view argument, SelectionSpec& spec)
{
    if (!argument.empty() && argument.back() == '%') {
        const std::string_view number = argument.substr(0, argument.size() - 1);
        const std::size_t point = number.find('.');
        const std::string_view whole = number.substr(0, point);
        const std::string_view fraction = point == std::string_view::npos ? std::string_view() : number.substr(point + 1);
        const bool digitsOnly = std::all_of(whole.begin(), whole.end(), [](char c) { return c >= '0' && c <= '9'; })
                                && std::all_of(fraction.begin(), fraction.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (whole.empty() || !digitsOnly || (point != std::string_view::npos && fraction.empty()))
            fail(text, "expected a percentage such as 5% or 0.5%, found \"" + std::string(argument) + "\"");
        if (fraction.size() > kMaxPercentDecimals)
            fail(text, "percentage \"" + std::string(argument) + "\" has more than 9 decimals");
        double value = 0.0;
        const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value,
                                                  std::chars_format::fixed);
        if (error != std::errc() || end != number.data() + number.size() || !(value > 0.0) || value > 100.0)
            fail(text, "percentage \"" + std::string(argument) + "\" is not in (0, 100]");
        spec.isPercent = true;
        spec.percent = value;
        return;
    }
    spec.count = parseInteger(text, argument, "a count");
    if (spec.count == 0)
        fail(text, "the count must be at least 1");
}

// The percentage as the exact decimal M / 10^E it is written as (its shortest round-trip
// text), so that percentage counts are computed in integers, the same on every machine.
void percentAsDecimal(double percent, std::uint64_t& mantissa, unsigned& decimals)
{
    char buffer[400];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, percent, std::chars_format::fixed);
    if (error != std::errc() || !(percent > 0.0) || percent > 100.0)
        throw SelectionError("selection: percentage " + std::to_string(percent) + " is not in (0, 100]");
    mantissa = 0;
    decimals = 0;
    bool afterPoint = false;
    for (const char* p = buffer; p != end; ++p) {
        if (*p == '.') {
            afterPoint = true;
            continue;
        }
        if (mantissa > (std::numeric_limits<std::uint64_t>::max() - 9) / 10 || decimals >= 18)
            throw SelectionError("selection: percentage " + std::string(buffer, end) + " has too many digits");
        mantissa = mantissa * 10 + static_cast<std::uint64_t>(*p - '0');
        decimals += afterPoint;
    }
}

std::string percentText(double percent)
{
    char buffer[400];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, percent, std::chars_format::fixed);
    return error == std::errc() ? std::string(buffer, end) : std::to_string(percent);
}

// How many of `total` a count or a percentage asks for: ceil(P% of total), capped at total.
std::uint64_t amountOf(const SelectionSpec& spec, std::uint64_t total)
{
    if (!spec.isPercent) {
        if (spec.count == 0)
            throw SelectionError("selection " + spec.toString() + ": the count must be at least 1");
        return std::min(spec.count, total);
    }
    std::uint64_t mantissa = 0;
    unsigned decimals = 0;
    percentAsDecimal(spec.percent, mantissa, decimals);
    Uint128 denominator = 100;
    for (unsigned i = 0; i < decimals; ++i)
        denominator *= 10;
    const Uint128 numerator = static_cast<Uint128>(mantissa) * total;
    const Uint128 amount = (numerator + denominator - 1) / denominator;
    return static_cast<std::uint64_t>(std::min<Uint128>(amount, total));
}

// Uniform in [0, m), m >= 1, from whole 64-bit draws: Lemire's multiply-shift with rejection
// ("Fast random integer generation in an interval", 2019). The high 64 bits of x * m are the
// candidate; draws whose low 64 bits fall below 2^64 mod m are rejected, which makes every
// result equally likely. Integer arithmetic only, so every machine draws the same numbers.
std::uint64_t boundedDraw(SamplingGenerator& generator, std::uint64_t m)
{
    Uint128 product = static_cast<Uint128>(generator.next()) * m;
    auto low = static_cast<std::uint64_t>(product);
    if (low < m) {
        const std::uint64_t threshold = (0 - m) % m;  // 2^64 mod m
        while (low < threshold) {
            product = static_cast<Uint128>(generator.next()) * m;
            low = static_cast<std::uint64_t>(product);
        }
    }
    return static_cast<std::uint64_t>(product >> 64);
}

// Floyd's algorithm: k distinct values of [0, n), uniformly, with exactly k bounded draws
// (for j = n - k .. n - 1: t = draw in [0, j]; take t, or j when t is already taken). Appends
// offset + value for each, ascending.
void floydSample(SamplingGenerator& generator, std::uint64_t n, std::uint64_t k, std::uint64_t offset,
                 std::vector<std::uint64_t>& out)
{
    if (k == 0)
        return;
    std::vector<std::uint64_t> chosen;
    chosen.reserve(static_cast<std::size_t>(k));
    if (k >= n / 64) {  // dense: a bitmap
        std::vector<bool> taken(static_cast<std::size_t>(n), false);
        for (std::uint64_t j = n - k; j < n; ++j) {
            const std::uint64_t t = boundedDraw(generator, j + 1);
            const std::uint64_t pick = taken[static_cast<std::size_t>(t)] ? j : t;
            taken[static_cast<std::size_t>(pick)] = true;
        }
        for (std::uint64_t i = 0; i < n; ++i)
            if (taken[static_cast<std::size_t>(i)])
                out.push_back(offset + i);
        return;
    }
    std::unordered_set<std::uint64_t> taken;
    taken.reserve(static_cast<std::size_t>(k) * 2);
    for (std::uint64_t j = n - k; j < n; ++j) {
        const std::uint64_t t = boundedDraw(generator, j + 1);
        const std::uint64_t pick = taken.count(t) ? j : t;
        taken.insert(pick);
        chosen.push_back(pick);
    }
    std::sort(chosen.begin(), chosen.end());
    for (std::uint64_t value : chosen)
        out.push_back(offset + value);
}

std::vector<std::uint64_t> everything(std::uint64_t n)
{
    std::vector<std::uint64_t> all(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), std::uint64_t{0});
    return all;
}

[[noreturn]] void outsideTape(const SelectionSpec& spec, std::uint64_t index, std::uint64_t count)
{
    throw SelectionError("selection " + spec.toString() + ": transaction " + std::to_string(index)
                         + " is not on the tape, which has " + std::to_string(count) + " transactions"
                         + (count == 0 ? std::string() : " (0-" + std::to_string(count - 1) + ")"));
}

std::vector<std::uint64_t> stratified(const SelectionSpec& spec, std::uint64_t seed, const SelectionInput& input)
{
    const std::uint64_t n = input.transactionCount;
    const std::uint64_t interval = input.snapshotInterval;
    if (interval == 0)
        throw SelectionError("selection " + spec.toString() + ": the tape's snapshot interval is 0");
    const std::uint64_t wanted = amountOf(spec, n);
    if (wanted >= n)
        return everything(n);
    const std::uint64_t segments = n / interval + (n % interval != 0);
    // Largest remainder: segment s of size m_s gets floor(wanted * m_s / n), and the seats left
    // go one each to the segments with the largest remainders (wanted * m_s mod n), ties to the
    // earlier segment.
    std::vector<std::uint64_t> allocation(static_cast<std::size_t>(segments));
    std::vector<std::uint64_t> remainder(static_cast<std::size_t>(segments));
    std::uint64_t seated = 0;
    for (std::uint64_t s = 0; s < segments; ++s) {
        const std::uint64_t size = std::min(interval, n - s * interval);
        const Uint128 quota = static_cast<Uint128>(wanted) * size;
        allocation[static_cast<std::size_t>(s)] = static_cast<std::uint64_t>(quota / n);
        remainder[static_cast<std::size_t>(s)] = static_cast<std::uint64_t>(quota % n);
        seated += allocation[static_cast<std::size_t>(s)];
    }
    std::vector<std::uint64_t> order(static_cast<std::size_t>(segments));
    std::iota(order.begin(), order.end(), std::uint64_t{0});
    const std::size_t left = static_cast<std::size_t>(wanted - seated);  // fewer than segments
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(left), order.end(),
                      [&](std::uint64_t a, std::uint64_t b) {
                          const std::uint64_t ra = remainder[static_cast<std::size_t>(a)];
                          const std::uint64_t rb = remainder[static_cast<std::size_t>(b)];
                          return ra != rb ? ra > rb : a < b;
                      });
    for (std::size_t i = 0; i < left; ++i)
        ++allocation[static_cast<std::size_t>(order[i])];

    SamplingGenerator generator(seed);
    std::vector<std::uint64_t> chosen;
    chosen.reserve(static_cast<std::size_t>(wanted));
    for (std::uint64_t s = 0; s < segments; ++s) {
        const std::uint64_t start = s * interval;
        const std::uint64_t size = std::min(interval, n - start);
        floydSample(generator, size, allocation[static_cast<std::size_t>(s)], start, chosen);
    }
    return chosen;
}

std::vector<std::uint64_t> topQ(const SelectionSpec& spec, const SelectionInput& input)
{
    const std::uint64_t n = input.transactionCount;
    const std::size_t parameters = input.parameterCount;
    if (static_cast<Uint128>(n) * parameters != input.updateL2.size())
        throw SelectionError("selection " + spec.toString() + " needs the recorded update L2 norms: expected "
                             + std::to_string(n) + " x " + std::to_string(parameters) + " values, found "
                             + std::to_string(input.updateL2.size()));
    const std::uint64_t q = amountOf(spec, n);
    if (q >= n)
        return parameters == 0 ? std::vector<std::uint64_t>() : everything(n);
    // Ranking, largest first: NaN above every number (a NaN update is the first thing to
    // look at), then by value (-0 == +0), ties to the lower index.
    std::vector<bool> chosen(static_cast<std::size_t>(n), false);
    std::vector<std::uint64_t> order(static_cast<std::size_t>(n));
    for (std::size_t p = 0; p < parameters; ++p) {
        auto value = [&](std::uint64_t t) { return input.updateL2[static_cast<std::size_t>(t) * parameters + p]; };
        auto before = [&](std::uint64_t a, std::uint64_t b) {
            const double va = value(a), vb = value(b);
            const bool nanA = std::isnan(va), nanB = std::isnan(vb);
            if (nanA != nanB)
                return nanA;
            if (!nanA && va != vb)
                return va > vb;
            return a < b;
        };
        std::iota(order.begin(), order.end(), std::uint64_t{0});
        std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(q) - 1, order.end(), before);
        for (std::uint64_t i = 0; i < q; ++i)
            chosen[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = true;
    }
    std::vector<std::uint64_t> result;
    for (std::uint64_t t = 0; t < n; ++t)
        if (chosen[static_cast<std::size_t>(t)])
            result.push_back(t);
    return result;
}

}  // namespace

SelectionSpec SelectionSpec::parse(const std::string& text)
{
    SelectionSpec spec;
    const std::size_t colon = text.find(':');
    const std::string kind = text.substr(0, colon);
    const bool hasArgument = colon != std::string::npos;
    const std::string_view argument =
        hasArgument ? std::string_view(text).substr(colon + 1) : std::string_view();

    if (kind == "all" || kind == "sampled") {
        if (hasArgument)
            fail(text, "\"" + kind + "\" takes no argument");
        spec.kind = kind == "all" ? Kind::All : Kind::Sampled;
        return spec;
    }
    if (!hasArgument) {
        if (kind == "ids" || kind == "range" || kind == "random" || kind == "stratified" || kind == "topq")
            fail(text, "\"" + kind + "\" needs an argument after \"" + kind + ":\"");
        fail(text, "unknown kind \"" + kind + "\"");
    }
    if (kind == "ids") {
        spec.kind = Kind::Ids;
        if (argument.empty())
            fail(text, "the id list is empty");
        std::size_t start = 0;
        while (true) {
            const std::size_t comma = argument.find(',', start);
            const std::string_view item = argument.substr(start, comma == std::string_view::npos ? comma : comma - start);
            if (item.empty())
                fail(text, "empty id in the list");
            spec.ids.push_back(parseInteger(text, item, "a transaction index"));
            if (comma == std::string_view::npos)
                break;
            start = comma + 1;
        }
        return spec;
    }
    if (kind == "range") {
        spec.kind = Kind::Range;
        const std::size_t dash = argument.find('-');
        if (dash == std::string_view::npos)
            fail(text, "expected FIRST-LAST, found \"" + std::string(argument) + "\"");
        spec.first = parseInteger(text, argument.substr(0, dash), "the first transaction index");
        spec.last = parseInteger(text, argument.substr(dash + 1), "the last transaction index");
        if (spec.first > spec.last)
            fail(text, "the range is reversed (" + std::to_string(spec.first) + " > " + std::to_string(spec.last) + ")");
        return spec;
    }
    if (kind == "random" || kind == "stratified" || kind == "topq") {
        spec.kind = kind == "random" ? Kind::Random : kind == "stratified" ? Kind::Stratified : Kind::TopQ;
        parseAmount(text, argument, spec);
        return spec;
    }
    fail(text, "unknown kind \"" + kind + "\"");
}

std::string SelectionSpec::toString() const
{
    auto amount = [this] { return isPercent ? percentText(percent) + "%" : std::to_string(count); };
    switch (kind) {
    case Kind::All: return "all";
    case Kind::Sampled: return "sampled";
    case Kind::Ids: {
        std::string text = "ids:";
        for (std::size_t i = 0; i < ids.size(); ++i)
            text += (i ? "," : "") + std::to_string(ids[i]);
        return text;
    }
    case Kind::Range: return "range:" + std::to_string(first) + "-" + std::to_string(last);
    case Kind::Random: return "random:" + amount();
    case Kind::Stratified: return "stratified:" + amount();
    case Kind::TopQ: return "topq:" + amount();
    }
    return "";
}

bool SelectionSpec::operator==(const SelectionSpec& other) const
{
    if (kind != other.kind)
        return false;
    switch (kind) {
    case Kind::All:
    case Kind::Sampled: return true;
    case Kind::Ids: return ids == other.ids;
    case Kind::Range: return first == other.first && last == other.last;
    case Kind::Random:
    case Kind::Stratified:
    case Kind::TopQ:
        return isPercent == other.isPercent && (isPercent ? percent == other.percent : count == other.count);
    }
    return false;
}

std::vector<std::uint64_t> selectTransactions(const SelectionSpec& spec, std::uint64_t seed, const SelectionInput& input)
{
    const std::uint64_t n = input.transactionCount;
    switch (spec.kind) {
    case SelectionSpec::Kind::All: return everything(n);
    case SelectionSpec::Kind::Ids: {
        std::vector<std::uint64_t> ids = spec.ids;
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        if (!ids.empty() && ids.back() >= n)
            outsideTape(spec, ids.back(), n);
        return ids;
    }
    case SelectionSpec::Kind::Range: {
        if (spec.first > spec.last)
            throw SelectionError("selection " + spec.toString() + ": the range is reversed");
        if (spec.last >= n)
            outsideTape(spec, spec.first >= n ? spec.first : spec.last, n);
        std::vector<std::uint64_t> range(static_cast<std::size_t>(spec.last - spec.first + 1));
        std::iota(range.begin(), range.end(), spec.first);
        return range;
    }
    case SelectionSpec::Kind::Random: {
        const std::uint64_t k = amountOf(spec, n);
        if (k >= n)
            return everything(n);
        SamplingGenerator generator(seed);
        std::vector<std::uint64_t> chosen;
        floydSample(generator, n, k, 0, chosen);
        return chosen;
    }
    case SelectionSpec::Kind::Stratified: return stratified(spec, seed, input);
    case SelectionSpec::Kind::TopQ: return topQ(spec, input);
    case SelectionSpec::Kind::Sampled: {
        if (input.hasSampledCheck.size() != n)
            throw SelectionError("selection sampled needs one sampled-check flag per transaction: expected "
                                 + std::to_string(n) + ", found " + std::to_string(input.hasSampledCheck.size()));
        std::vector<std::uint64_t> sampled;
        for (std::uint64_t t = 0; t < n; ++t)
            if (input.hasSampledCheck[static_cast<std::size_t>(t)])
                sampled.push_back(t);
        return sampled;
    }
    }
    return {};
}

}  // namespace zkdv
