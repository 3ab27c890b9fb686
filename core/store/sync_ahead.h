#pragma once
// Syncs a case file to disk on a thread of its own while an ingest is still writing it, so
// the commit's own sync finds little left to do. A commit must wait until every page it
// wrote is on disk; for a million transactions that is ~170 MB, and on the machines
// measured (virtual disks) the sync at the commit took 0.13–0.2 s, serial after the scan.
// Synced in the background every ~10 MB, the commit's sync takes a few milliseconds
// (docs/performance.md). The thread spends its time waiting for the disk, not computing.

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace zkdv {

class Database;

class SyncAhead {
public:
    // Syncs the connection's database file (through Database::syncDescriptor(), which outlives
    // every lock SQLite holds) and its write-ahead log when present.
    explicit SyncAhead(Database& db);
    // Waits for a sync in progress.
    ~SyncAhead();
    SyncAhead(const SyncAhead&) = delete;
    SyncAhead& operator=(const SyncAhead&) = delete;

    // Asks for what has been written so far to be synced; returns at once. Requests made
    // while a sync runs are served by one more sync after it.
    void request();

private:
    void run();

    int database_ = -1;  // owned by the Database
    int log_ = -1;       // owned here: SQLite takes no locks on the -wal file itself
    std::mutex mutex_;
    std::condition_variable wake_;
    bool requested_ = false;
    bool stopping_ = false;
    std::thread thread_;  // last: starts once everything above exists
};

}  // namespace zkdv
