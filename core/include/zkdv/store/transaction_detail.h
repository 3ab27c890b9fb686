#pragma once
// Everything the case and the tape say about one transaction, for the workstation's
// transaction detail pane (Wireshark's packet details): the case's row and fingerprints, the
// record's batch tensors and optimizer values read from the tape, the shown run's verdict
// and comparisons, and the auditor's note. Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_notes.h"

namespace zkdv {

class CaseStore;
class Database;

// A tensor of the record: its name, dtype, shape and the SHA-256 of its bytes.
struct RecordedTensor {
    std::string name;
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::string sha256;
};

// The recorded L2 norm and max-abs of one parameter's update (every record carries them).
struct ParameterFingerprint {
    std::string parameter;
    double l2 = 0.0;
    double maxAbs = 0.0;
};

struct TransactionDetail {
    std::int64_t tapeId = 0;
    std::uint64_t index = 0;
    std::uint64_t segment = 0;
    // NaN where the case holds NULL.
    double loss = 0.0, lr = 0.0, updateNorm = 0.0, maxUpdate = 0.0;
    std::uint64_t wallTimeNs = 0;  // 0: not recorded
    bool hasDeltas = false;
    bool hasStateDigest = false;
    std::string stateDigest;  // hex, "" when the record carries none
    std::uint64_t recordIndex = 0, recordOffset = 0, recordLength = 0;
    std::string recordDigest;  // hex
    std::vector<ParameterFingerprint> fingerprints;  // model-layout order

    // Read from the record itself; when it cannot be read, recordProblem says why and these are empty.
    std::string recordSource;  // the tape file, or "the case (embedded copy)"
    std::string tapeFile;      // the tape file when the record was read from it ("" otherwise)
    std::string recordProblem;
    std::string lossDtype;
    std::vector<RecordedTensor> batch;
    std::vector<std::pair<std::string, std::vector<double>>> optimizerValues;  // option, per group
    std::vector<RecordedTensor> deltas;
    // The step's gradient transforms (tape format 1.7), as torch's calls, each clip_grad_norm_
    // with the total norm it recorded: "clip_grad_norm_(max_norm=1, norm_type=2): total norm 3.25".
    std::vector<std::string> gradientTransforms;

    // The shown run (0: none replayed this tape), its verdict of the transaction (nullopt:
    // the run did not replay it) and every comparison it stored for it.
    std::int64_t runId = 0;
    std::uint64_t tapeRunCount = 0;  // replay runs of the tape, whichever is shown
    std::optional<StoredVerdict> verdict;
    std::vector<TensorComparison> comparisons;

    std::optional<TransactionNote> note;
};

// Whether transaction `index` of the tape carries its full deltas (false when there is no such transaction).
bool transactionHasDeltas(Database& db, std::int64_t tapeId, std::uint64_t index);

// Reads transaction `index` of tape `tapeId`, with run `runId`'s results (0: the tape's
// newest run; TransactionTable::kEveryRun: the newest run that replayed the transaction). Throws Error when the case has no such transaction; a tape that moved or
// changed is not an error (recordProblem says so).
TransactionDetail loadTransactionDetail(CaseStore& store, std::int64_t tapeId, std::uint64_t index, std::int64_t runId = 0);

}  // namespace zkdv
