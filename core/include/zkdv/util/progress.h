#pragma once
// How long-running core work reports progress and learns that it should stop, without
// knowing who is listening (a terminal, a Qt progress frame, a test).

#include <cstdint>
#include <string_view>

#include "zkdv/util/error.h"

namespace zkdv {

// What ending long work early does to the work done so far; each kind of work has one, and
// a frontend names its button after it (Wireshark's progress dialog: stop vs cancel).
enum class Interruption {
    Cancel,  // undone: nothing of it stays (an ingest rolls back and throws OperationCancelled)
    Stop,    // kept: what finished stays (a replay keeps its verdicts; its run is marked cancelled)
};

class ProgressSink {
public:
    virtual ~ProgressSink() = default;
    // `done` out of `total` units (bytes, transactions…) of the phase named by `phase`.
    virtual void report(std::uint64_t done, std::uint64_t total, std::string_view phase) = 0;
    // Polled between units of work; true ends the work early, as its Interruption says: an
    // ingest (or a demo recording) cancels, a replay stops.
    virtual bool cancelRequested() const { return false; }
};

// Thrown when a ProgressSink ended work whose Interruption is Cancel; whatever was being
// written is rolled back.
class OperationCancelled : public Error {
public:
    OperationCancelled() : Error("operation cancelled") {}
};

}  // namespace zkdv
