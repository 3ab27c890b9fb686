#pragma once
// How long-running core work reports progress and learns that it should stop, without
// knowing who is listening (a terminal, a Qt progress frame, a test).

#include <cstdint>
#include <string_view>

#include "zkdv/util/error.h"

namespace zkdv {

class ProgressSink {
public:
    virtual ~ProgressSink() = default;
    // `done` out of `total` units (bytes, transactions…) of the phase named by `phase`.
    virtual void report(std::uint64_t done, std::uint64_t total, std::string_view phase) = 0;
    // Polled between units of work; true makes the work stop with OperationCancelled.
    virtual bool cancelRequested() const { return false; }
};

// Thrown when a ProgressSink asked for cancellation; whatever was being written is rolled back.
class OperationCancelled : public Error {
public:
    OperationCancelled() : Error("operation cancelled") {}
};

}  // namespace zkdv
