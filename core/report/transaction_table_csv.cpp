#include "zkdv/report/transaction_table_csv.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "zkdv/report/csv_text.h"
#include "zkdv/report/report_file.h"
#include "zkdv/store/transaction_table.h"
#include "zkdv/util/error.h"
#include "zkdv/util/progress.h"

namespace zkdv {

namespace {

constexpr std::uint64_t kWindow = 4096;

std::string optionalNumber(double value) { return std::isnan(value) ? std::string() : csvNumber(value); }

std::string row(const TransactionRow& r)
{
    std::string line = std::to_string(r.index) + ',' + optionalNumber(r.loss) + ',' + optionalNumber(r.lr) + ',' +
                       optionalNumber(r.updateNorm) + ',' + optionalNumber(r.maxUpdate) + ',' + (r.hasDeltas ? "1" : "0") + ',' +
                       (r.hasStateDigest ? "1" : "0") + ',' + std::to_string(r.segment) + ',';
    if (r.verdict)
        line += std::string(verdictName(*r.verdict)) + ',' + std::to_string(r.verdictRun) + ',' + std::to_string(r.runCount) + ',' +
                (r.runsDisagree ? "1" : "0") + ',';
    else
        line += ",,0,0,";
    line += csvField(r.toleranceCriterion) + ',' + csvField(r.worstTensor) + ',' + csvField(r.worstSlot) + ',' +
            optionalNumber(r.worstMaxUlp) + ',' + optionalNumber(r.worstRelativeL2) + ',' + csvField(r.flag) + ',' + csvField(r.note) +
            kCsvLineEnd;
    return line;
}

}  // namespace

void writeTransactionTableCsv(TransactionTable& table, const std::string& path, ProgressSink* progress)
{
    const std::string temporary = reportTemporaryPath(path);
    try {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out)
            throw IoError("cannot write " + path);
        out << "index,loss,lr,update_norm,max_update,has_deltas,has_state_digest,segment,verdict,verdict_run,run_count,runs_disagree,"
               "tolerance_criterion,worst_tensor,worst_slot,worst_max_ulp,worst_rel_l2,flag,note"
            << kCsvLineEnd;
        const std::uint64_t total = table.rowCount();
        for (std::uint64_t first = 0; first < total; first += kWindow) {
            for (const TransactionRow& r : table.rows(first, kWindow))
                out << row(r);
            if (progress) {
                progress->report(std::min(total, first + kWindow), total, "writing rows");
                if (progress->cancelRequested())
                    throw OperationCancelled();
            }
        }
        out.flush();
        if (!out)
            throw IoError("cannot write " + path + " (the disk may be full)");
    } catch (...) {
        std::remove(temporary.c_str());
        throw;
    }
    publishReportFile(path);
}

}  // namespace zkdv
