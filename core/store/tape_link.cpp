#include "zkdv/store/tape_link.h"

#include <optional>
#include <set>

#include "zkdv/store/database.h"
#include "zkdv/tape/resume_link.h"
#include "zkdv/util/error.h"

namespace zkdv {

namespace {

std::optional<Digest> digestColumn(const Statement& row, int column)
{
    if (row.isNull(column))
        return std::nullopt;
    return digestFromHex(row.text(column));
}

// The other sealed tapes that continue the tape (chainHead, size), when `tapeId` is sealed.
std::vector<std::int64_t> forksOf(Database& db, std::int64_t tapeId, const std::string& chainHead, std::uint64_t size)
{
    std::vector<std::int64_t> forks;
    Statement others = db.prepare("SELECT o.id FROM tapes s, tapes o WHERE s.id = ?1 AND s.status = 'sealed' AND o.id <> s.id "
                                  "AND o.status = 'sealed' AND lower(json_extract(o.root_json, '$.resumes.chain_head')) = ?2 "
                                  "AND json_extract(o.root_json, '$.resumes.size') = ?3 ORDER BY o.id");
    others.bind(1, tapeId).bind(2, chainHead).bind(3, static_cast<std::int64_t>(size));
    while (others.step())
        forks.push_back(others.int64(0));
    return forks;
}

}  // namespace

std::string_view tapeLinkStatusName(TapeLinkStatus status)
{
    switch (status) {
    case TapeLinkStatus::StartsRun: return "starts-run";
    case TapeLinkStatus::Continues: return "continues";
    case TapeLinkStatus::PreviousMissing: return "previous-missing";
    case TapeLinkStatus::Broken: return "broken";
    }
    return "broken";
}

std::string TapeLink::describe() const
{
    std::string fork;
    for (std::size_t i = 0; i < forkedWith.size(); ++i)
        fork += (i == 0 ? "" : i + 1 == forkedWith.size() ? " and " : ", ") + std::to_string(forkedWith[i]);
    if (!fork.empty())
        fork = "; FORKED: sealed tape" + std::string(forkedWith.size() == 1 ? " " : "s ") + fork + " of the case continue" +
               (forkedWith.size() == 1 ? "s" : "") + " the same tape, so the run was trained more than once from that state";
    return describeLink() + fork;
}

std::string TapeLink::describeLink() const
{
    switch (status) {
    case TapeLinkStatus::StartsRun: return "starts its run";
    case TapeLinkStatus::Continues: return "continues tape " + std::to_string(previousTapeId) + " (the link holds)";
    case TapeLinkStatus::PreviousMissing:
        return "continues a tape the case does not hold (chain head " + previousChainHead + ", " + std::to_string(previousSize) +
               " bytes): ingest it to check the link";
    case TapeLinkStatus::Broken: return "does NOT continue tape " + std::to_string(previousTapeId) + ", which its root names: " + problem;
    }
    return {};
}

TapeLink tapeLink(Database& db, std::int64_t tapeId)
{
    TapeLink link;
    Statement self = db.prepare("SELECT root_json FROM tapes WHERE id = ?1");
    self.bind(1, tapeId);
    if (!self.step())
        return link;
    RootRecord root;
    try {
        const std::string text = self.text(0);
        root = RootRecord::parse(ByteSpan(std::string_view(text)));
    } catch (const Error& error) {
        // Verified at ingest; a root that no longer parses is a case edited since.
        link.status = TapeLinkStatus::Broken;
        link.problem = std::string("its stored root no longer reads: ") + error.what();
        return link;
    }
    if (!root.resumes)
        return link;
    link.previousChainHead = toHex(root.resumes->chainHead);
    link.previousSize = root.resumes->size;
    link.forkedWith = forksOf(db, tapeId, link.previousChainHead, link.previousSize);
    Statement previous = db.prepare(
        "SELECT id, root_json, status, transaction_count, final_state_digest, last_schedule_epoch, last_grad_scaler FROM tapes"
        " WHERE chain_head = ?1 AND size = ?2 ORDER BY id LIMIT 1");
    previous.bind(1, link.previousChainHead).bind(2, static_cast<std::int64_t>(link.previousSize));
    if (!previous.step()) {
        link.status = TapeLinkStatus::PreviousMissing;
        return link;
    }
    link.previousTapeId = previous.int64(0);
    TapeEnd end;
    try {
        const std::string text = previous.text(1);
        end.root = RootRecord::parse(ByteSpan(std::string_view(text)));
    } catch (const Error& error) {
        link.status = TapeLinkStatus::Broken;
        link.problem = std::string("the stored root of the tape it continues no longer reads: ") + error.what();
        return link;
    }
    end.chainHead = root.resumes->chainHead;
    end.size = root.resumes->size;
    end.sealed = previous.text(2) == "sealed";
    end.transactions = static_cast<std::uint64_t>(std::max<std::int64_t>(0, previous.int64(3)));
    end.finalStateDigest = digestColumn(previous, 4);
    if (!previous.isNull(5))
        end.lastScheduleEpoch = static_cast<std::uint64_t>(std::max<std::int64_t>(0, previous.int64(5)));
    try {
        if (!previous.isNull(6) && end.root.gradScaler)
            end.lastGradScalerStep = parseGradScalerStep(previous.text(6), end.root.gradScaler->rule);
    } catch (const Error& error) {
        link.status = TapeLinkStatus::Broken;
        link.problem = std::string("the case's record of the GradScaler after the tape it continues no longer reads: ") + error.what();
        return link;
    }
    if (!end.finalStateDigest && end.sealed) {
        link.status = TapeLinkStatus::Broken;
        link.problem = "the case has no final state digest for that tape (ingested before case schema 12): ingest it again";
        return link;
    }
    link.problem = resumeLinkProblem(end, root);
    link.status = link.problem.empty() ? TapeLinkStatus::Continues : TapeLinkStatus::Broken;
    return link;
}

std::vector<std::int64_t> runTapes(Database& db, std::int64_t tapeId)
{
    std::vector<std::int64_t> backwards{tapeId};
    std::set<std::int64_t> seen{tapeId};
    for (TapeLink link = tapeLink(db, tapeId); link.status == TapeLinkStatus::Continues; link = tapeLink(db, link.previousTapeId)) {
        if (!seen.insert(link.previousTapeId).second)
            break;  // a cycle needs a hash collision; never loop on a hostile case all the same
        backwards.push_back(link.previousTapeId);
    }
    std::vector<std::int64_t> run(backwards.rbegin(), backwards.rend());
    // Forward: the one tape of the case that continues the last one, while there is exactly one.
    for (;;) {
        Statement next = db.prepare("SELECT n.id FROM tapes p, tapes n WHERE p.id = ?1 AND n.id <> p.id AND n.transactions_before > 0 "
                                    "AND lower(json_extract(n.root_json, '$.resumes.chain_head')) = p.chain_head "
                                    "AND json_extract(n.root_json, '$.resumes.size') = p.size ORDER BY n.id");
        next.bind(1, run.back());
        std::vector<std::int64_t> candidates;
        while (next.step())
            candidates.push_back(next.int64(0));
        if (candidates.size() != 1 || !seen.insert(candidates.front()).second)
            break;
        if (tapeLink(db, candidates.front()).status != TapeLinkStatus::Continues)
            break;
        run.push_back(candidates.front());
    }
    return run;
}

}  // namespace zkdv
