#include "zkdv/audit/verdict.h"

namespace zkdv {

std::string_view verdictName(Verdict verdict)
{
    switch (verdict) {
    case Verdict::Exact:
        return "exact";
    case Verdict::WithinTolerance:
        return "within-tolerance";
    case Verdict::Diverged:
        return "diverged";
    case Verdict::Unverifiable:
        return "unverifiable";
    }
    return "unverifiable";
}

std::optional<Verdict> verdictFromName(std::string_view name)
{
    for (Verdict v : {Verdict::Exact, Verdict::WithinTolerance, Verdict::Diverged, Verdict::Unverifiable})
        if (verdictName(v) == name)
            return v;
    return std::nullopt;
}

}  // namespace zkdv
