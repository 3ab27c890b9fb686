#pragma once
// The workstation's transaction table as it is shown (its run, sort and filter) written as
// CSV, every row of the view, not only those on screen (docs/report-schema.md, "Table CSV").

#include <string>

namespace zkdv {

class ProgressSink;
class TransactionTable;

// Writes atomically (a temporary file renamed over `path`); `progress` hears rows written
// and may cancel (OperationCancelled: nothing is left at `path`). Throws IoError naming the
// file, DatabaseError when the case cannot be read.
void writeTransactionTableCsv(TransactionTable& table, const std::string& path, ProgressSink* progress = nullptr);

}  // namespace zkdv
