#include "sync_ahead.h"

#include "zkdv/store/database.h"

#include <fcntl.h>
#include <unistd.h>

namespace zkdv {

namespace {
// Read-only is enough: a sync writes the file's pages, whoever wrote them. A file that
// cannot be opened is not synced ahead, which costs only time at the commit.
int openForSync(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }

void syncData(int fd)
{
    if (fd < 0)
        return;
#if defined(__APPLE__)
    (void)::fsync(fd);
#else
    (void)::fdatasync(fd);
#endif
}
}  // namespace

SyncAhead::SyncAhead(Database& db)
    : database_(db.syncDescriptor()), log_(openForSync(db.path() + "-wal")), thread_([this] { run(); })
{
}

SyncAhead::~SyncAhead()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
    // Only the log's own descriptor: closing one of the database file would drop the
    // locks of the transaction that is still open (see Database::syncDescriptor).
    if (log_ >= 0)
        ::close(log_);
}

void SyncAhead::request()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        requested_ = true;
    }
    wake_.notify_one();
}

void SyncAhead::run()
{
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return requested_ || stopping_; });
            if (stopping_)
                return;
            requested_ = false;
        }
        // The commit syncs again itself: these only move the waiting earlier.
        syncData(database_);
        syncData(log_);
    }
}

}  // namespace zkdv
