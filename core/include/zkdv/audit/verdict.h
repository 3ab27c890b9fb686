#pragma once
// What a replay concludes about one transaction, or about one check of it.

#include <optional>
#include <string_view>

namespace zkdv {

// Ordered from best to worst: a transaction's verdict is the worst of its checks'.
enum class Verdict { Exact, WithinTolerance, Diverged, Unverifiable };

// "exact", "within-tolerance", "diverged", "unverifiable" (the case's spelling).
std::string_view verdictName(Verdict verdict);
std::optional<Verdict> verdictFromName(std::string_view name);
// The verdict a stored or received name stands for; a name this build does not know cannot
// pass, so it reads as unverifiable.
inline Verdict verdictOrUnverifiable(std::string_view name) { return verdictFromName(name).value_or(Verdict::Unverifiable); }
inline Verdict worse(Verdict a, Verdict b) { return a > b ? a : b; }
inline bool passes(Verdict verdict) { return verdict == Verdict::Exact || verdict == Verdict::WithinTolerance; }

}  // namespace zkdv
