#include "replay_worker_pool.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>

#include <poll.h>
#include <unistd.h>

#include "worker_clock.h"
#include "worker_log.h"
#include "worker_process.h"
#include "zkdv/replay/worker_protocol.h"

namespace zkdv::worker {

namespace {

using Clock = std::chrono::steady_clock;

std::string secondsText(double s)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", s);
    return text;
}

std::string mebibytes(std::uint64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.0f MiB", std::ceil(static_cast<double>(bytes) / (1 << 20)));
    return text;
}

Clock::time_point after(double s)
{
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(s, 1e9)));
}

}  // namespace

struct ReplayWorkerPool::Slot {
    enum class State { Empty, Starting, Idle, Busy, Closing };
    State state = State::Empty;
    std::unique_ptr<WorkerProcess> process;
    unsigned number = 0;  // in the log
    FrameBuffer incoming{kMaxResultFrame};
    // Segments sent, the first being replayed: one more waits in the channel, so the worker
    // never idles for a round trip to the parent between segments.
    std::deque<std::size_t> queued;
    std::uint64_t next = 0;     // the transaction the worker is on, while Busy
    // Charges the worker's program for the start, then each transaction: wall time less what
    // a stall of this machine took (worker_clock.h).
    WorkerClock clock;
    Clock::time_point deadline;
    double budget = 0;          // of the deadline, for the message
    std::string basis;          // how the budget was derived, for the message
    std::string memoryRefusal;  // set by a MemoryExhausted message
    bool greeted = false;       // its hello arrived
};

ReplayWorkerPool::ReplayWorkerPool(const std::vector<ReplaySegment>& segments, WorkerPoolSetup setup,
                                   std::vector<std::unique_ptr<WorkerProcess>> started)
    : segments_(segments), setup_(std::move(setup)), slots_(std::max(1u, setup_.workers)), prestarted_(std::move(started)),
      budget_(setup_.limits)
{
    for (std::size_t s = 0; s < segments_.size(); ++s)
        unassigned_.push_back(s);
}

WorkerHello awaitHello(WorkerProcess& p, double seconds, WorkerLog& log)
{
    FrameBuffer incoming(kMaxResultFrame);
    WorkerClock clock(p.pid());  // a stall of this machine is not the worker's start time
    std::string why;
    while (why.empty()) {
        pollfd fds[3] = {{p.channel(), POLLIN, 0}, {p.output(), POLLIN, 0}, {p.errors(), POLLIN, 0}};
        clock.sample();
        const double left = seconds - clock.chargedSeconds();
        if (left < 0) {
            why = "did not start within " + secondsText(seconds) + " s";
            break;
        }
        poll(fds, 3, static_cast<int>(std::min(left * 1000.0 + 1, 100.0)));
        log.append(1, "stdout", p.drainOutput());
        log.append(1, "stderr", p.drainErrors());
        if (!fds[0].revents)
            continue;
        // Exactly the hello frame, nothing after it: what follows is the pool's to read.
        std::uint8_t buffer[4096];
        const std::size_t need = incoming.pendingFrameBytes(sizeof buffer) ;
        const ssize_t n = need == 0 ? 0 : read(p.channel(), buffer, need);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0 && need > 0) {
            p.awaitExit(1.0);
            why = p.reap();
            if (why.empty())
                why = "closed its channel";
            break;
        }
        incoming.append(buffer, static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
        try {
            if (auto message = incoming.next()) {
                if (message->first != MessageType::Hello)
                    throw ProtocolError("the first message is not a hello");
                return decodeHello(message->second);
            }
            if (need == 0)
                throw ProtocolError("a first message larger than a hello");
        } catch (const Error& error) {
            why = std::string("broke the replay protocol (") + error.what() + ")";
        }
    }
    const std::string tail = log.tail(1);
    throw Error("the replay worker " + p.executable() + " " + why + (tail.empty() ? std::string() : "; its last output: " + tail));
}

ReplayWorkerPool::~ReplayWorkerPool() = default;

std::uint64_t segmentSnapshotBytes(const RecordPlan& records, const ReplaySegment& segment, std::uint64_t t)
{
    auto bytesOf = [&](std::uint64_t k) {
        auto it = records.snapshots.find(k);
        return it == records.snapshots.end() ? std::uint64_t(0) : it->second.frameSize;
    };
    std::uint64_t bytes = t == segment.snapshot ? bytesOf(t) : 0;
    if (t == segment.lastTransaction && segment.reachesNextSnapshot)
        bytes += bytesOf(t + 1);
    return bytes;
}

void ReplayWorkerPool::failRemaining(const ReplaySegment& segment, std::uint64_t from, UnverifiableCause cause, const std::string& why)
{
    for (std::uint64_t t = from; t <= segment.lastTransaction; ++t) {
        TransactionOutcome outcome;
        outcome.index = t;
        outcome.segment = t / setup_.snapshotInterval;
        outcome.selected = std::binary_search(segment.selected.begin(), segment.selected.end(), t);
        outcome.verdict = Verdict::Unverifiable;
        outcome.cause = cause;
        outcome.detail = why;
        arrived_.push_back(std::move(outcome));
    }
}

void ReplayWorkerPool::failUnassigned(UnverifiableCause cause, const std::string& why)
{
    for (; !unassigned_.empty(); unassigned_.pop_front())
        failRemaining(segments_[unassigned_.front()], segments_[unassigned_.front()].snapshot, cause, why);
}

void ReplayWorkerPool::startTransaction(Slot& slot, const ReplaySegment& segment)
{
    slot.clock.restart();
    const std::uint64_t snapshotBytes = setup_.snapshotBytes ? setup_.snapshotBytes(segment, slot.next) : 0;
    slot.budget = budget_.seconds(snapshotBytes);
    slot.deadline = after(slot.budget);
    const ReplayLimits& limits = setup_.limits;
    slot.basis = budget_.measuredCount() == 0
                     ? "the budget of a transaction before this replay has measured one"
                     : secondsText(limits.timeFactor) + " x the median " + secondsText(budget_.medianSeconds()) + " s of the " +
                           std::to_string(budget_.measuredCount()) + " transactions this replay measured, at least " +
                           secondsText(limits.transactionFloorSeconds) + " s";
    if (snapshotBytes > 0)
        slot.basis += ", and " + secondsText(ReplayLimits::snapshotSeconds(snapshotBytes)) + " s to read its snapshots";
}

void ReplayWorkerPool::startWorkers()
{
    for (Slot& slot : slots_) {
        // No more workers starting than segments left for them.
        const auto starting = static_cast<std::size_t>(
            std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == Slot::State::Starting; }));
        if (slot.state != Slot::State::Empty || starting >= unassigned_.size())
            continue;
        slot = Slot();
        slot.number = ++started_;
        if (!prestarted_.empty()) {
            slot.process = std::move(prestarted_.front());
            prestarted_.erase(prestarted_.begin());
            slot.greeted = slot.number == 1;
        } else {
            try {
                slot.process = std::make_unique<WorkerProcess>(setup_.executable, setup_.profile);
            } catch (const Error& error) {
                failUnassigned(UnverifiableCause::Environment, error.what());
                return;
            }
        }
        slot.process->send(frame(MessageType::Job, setup_.job));
        slot.clock = WorkerClock(slot.process->pid());
        slot.state = Slot::State::Starting;
        slot.budget = setup_.limits.startSeconds;
        slot.deadline = after(slot.budget);
    }
}

void ReplayWorkerPool::assignOrFinish(Slot& slot)
{
    constexpr std::size_t kSegmentsSent = 2;
    while (slot.queued.size() < kSegmentsSent && !unassigned_.empty()) {
        slot.queued.push_back(unassigned_.front());
        unassigned_.pop_front();
        slot.process->send(frame(MessageType::Segment, encodeSegment(segments_[slot.queued.back()])));
    }
    if (slot.queued.empty()) {
        slot.process->finishSending();
        slot.state = Slot::State::Closing;
        slot.budget = 10;
        slot.deadline = after(slot.budget);
        return;
    }
    if (slot.state != Slot::State::Busy) {
        const ReplaySegment& segment = segments_[slot.queued.front()];
        slot.state = Slot::State::Busy;
        slot.next = segment.snapshot;
        startTransaction(slot, segment);
    }
}

void ReplayWorkerPool::handleMessages(Slot& slot)
{
    while (auto message = slot.incoming.next()) {
        auto& [type, payload] = *message;
        switch (type) {
        case MessageType::Hello:
            if (slot.state != Slot::State::Starting || slot.greeted)
                throw ProtocolError("an unexpected hello");
            decodeHello(payload);
            slot.greeted = true;
            break;
        case MessageType::Ready:
            if (slot.state != Slot::State::Starting || !slot.greeted)
                throw ProtocolError("an unexpected ready message");
            assignOrFinish(slot);
            break;
        case MessageType::LoadFailed: {
            if (slot.state != Slot::State::Starting)
                throw ProtocolError("an unexpected load failure");
            // Loading is deterministic: every other worker would fail the same way.
            const LoadFailure failure = decodeLoadFailure(payload);
            failUnassigned(failure.cause, failure.why);
            slot.process->finishSending();
            slot.state = Slot::State::Closing;
            slot.deadline = after(10);
            break;
        }
        case MessageType::Outcome: {
            if (slot.state != Slot::State::Busy)
                throw ProtocolError("an outcome outside a segment");
            const ReplaySegment& segment = segments_[slot.queued.front()];
            TransactionOutcome outcome = decodeOutcome(payload);
            if (outcome.index != slot.next || slot.next > segment.lastTransaction)
                throw ProtocolError("an outcome for transaction " + std::to_string(outcome.index) + ", expected " + std::to_string(slot.next));
            // The parent's own account of which transaction this is.
            outcome.segment = outcome.index / setup_.snapshotInterval;
            outcome.selected = std::binary_search(segment.selected.begin(), segment.selected.end(), outcome.index);
            if (outcome.verdict != Verdict::Unverifiable)
                outcome.cause = UnverifiableCause::None;
            arrived_.push_back(std::move(outcome));
            budget_.measured(slot.clock.chargedSeconds());
            ++slot.next;
            if (slot.next <= segment.lastTransaction)
                startTransaction(slot, segment);
            break;
        }
        case MessageType::SegmentDone: {
            if (slot.state != Slot::State::Busy)
                throw ProtocolError("an unexpected end of segment");
            // A segment stops early after a failure it reports itself; the rest is not replayed.
            const ReplaySegment& segment = segments_[slot.queued.front()];
            if (slot.next <= segment.lastTransaction)
                failRemaining(segment, slot.next, UnverifiableCause::ProgramBrokeProtocol,
                              "the replay worker ended the segment at transaction " + std::to_string(slot.next) + " without an outcome for it");
            slot.queued.pop_front();
            slot.state = Slot::State::Idle;
            assignOrFinish(slot);
            break;
        }
        case MessageType::MemoryExhausted: {
            const std::uint64_t bytes = decodeCount(payload);
            slot.memoryRefusal = "reached its memory limit of " + mebibytes(setup_.memoryLimitBytes) +
                                 (bytes ? " (an allocation of " + mebibytes(bytes) + " was refused)" : std::string());
            break;
        }
        default: throw ProtocolError("a message the parent does not accept from a worker");
        }
    }
}

void ReplayWorkerPool::workerEnded(Slot& slot, const std::string& why, UnverifiableCause cause)
{
    WorkerProcess& process = *slot.process;
    // A worker that closed its channel is usually exiting: its own status says more than SIGKILL.
    if (why.empty())
        process.awaitExit(1.0);
    std::string status = process.reap();
    // What it printed last, before it is forgotten (both pipes end with the group).
    if (setup_.log) {
        for (int round = 0; round < 64 && (process.output() >= 0 || process.errors() >= 0); ++round) {
            setup_.log->append(slot.number, "stdout", process.drainOutput());
            setup_.log->append(slot.number, "stderr", process.drainErrors());
        }
    }
    std::string reason = why;
    if (reason.empty() && !slot.memoryRefusal.empty()) {
        reason = slot.memoryRefusal;
        cause = UnverifiableCause::ProgramExceededMemory;
    }
    if (reason.empty() && !status.empty())
        reason = status;
    // A worker that never said hello did not start: this machine's fault. Once it has, the
    // sealed program is what it runs, and what becomes of it within the auditor's limits is
    // the program's doing (docs/replay.md, "Whose failure").
    if (slot.state == Slot::State::Starting && !slot.greeted)
        cause = UnverifiableCause::Environment;
    // An illegal instruction is this CPU meeting kernels built for a wider one (a kernel level
    // the auditor's environment forces): the allow-listed operators emit no instructions of
    // the program's choosing, so it is not the trainer's doing.
    if (why.empty() && process.terminatingSignal() == SIGILL) {
        cause = UnverifiableCause::Environment;
        reason += ": this CPU lacks an instruction the replay's kernels use (are ATEN_CPU_CAPABILITY or another kernel "
                  "setting above what it runs?)";
    }
    if (slot.state == Slot::State::Starting || slot.state == Slot::State::Busy) {
        if (reason.empty())
            reason = "closed its channel";
        const std::string tail = setup_.log ? setup_.log->tail(slot.number) : std::string();
        const std::string where = slot.state == Slot::State::Starting ? " while loading the program"
                                                                      : " at transaction " + std::to_string(slot.next);
        std::string text = "replay worker " + reason + where;
        if (!tail.empty() && slot.memoryRefusal.empty() && why.rfind("exceeded", 0) != 0)
            text += "; its last output: " + tail.substr(tail.size() > 300 ? tail.size() - 300 : 0);
        if (blamesTrainer(cause))
            text += "; " + std::string(trainersFailureReason(cause));
        if (slot.state == Slot::State::Busy) {
            failRemaining(segments_[slot.queued.front()], slot.next, cause, text);
            // The segments it had not begun go to the other workers.
            for (auto it = slot.queued.rbegin(); it + 1 != slot.queued.rend(); ++it)
                unassigned_.push_front(*it);
        }
        else
            failUnassigned(cause, text);  // a program that cannot be loaded fails the same way everywhere
    }
    slot.process.reset();
    slot.state = Slot::State::Empty;
}

bool ReplayWorkerPool::run(const std::function<void(std::vector<TransactionOutcome>&)>& store, const std::function<bool()>& cancelled)
{
    auto busy = [&] {
        return std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state != Slot::State::Empty; });
    };
    while (true) {
        if (!arrived_.empty()) {
            std::sort(arrived_.begin(), arrived_.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
            store(arrived_);
            arrived_.clear();
        }
        if (cancelled()) {
            for (Slot& slot : slots_)
                slot.process.reset();  // kills and reaps
            return false;
        }
        startWorkers();
        if (!busy() && unassigned_.empty())
            return true;

        std::vector<pollfd> fds;
        std::vector<std::pair<Slot*, int>> owners;  // slot, 0 channel / 1 stdout / 2 stderr
        Clock::time_point wake = Clock::now() + std::chrono::milliseconds(100);
        for (Slot& slot : slots_) {
            if (slot.state == Slot::State::Empty)
                continue;
            WorkerProcess& p = *slot.process;
            fds.push_back({p.channel(), static_cast<short>(POLLIN | (p.sending() ? POLLOUT : 0)), 0});
            owners.emplace_back(&slot, 0);
            if (p.output() >= 0) {
                fds.push_back({p.output(), POLLIN, 0});
                owners.emplace_back(&slot, 1);
            }
            if (p.errors() >= 0) {
                fds.push_back({p.errors(), POLLIN, 0});
                owners.emplace_back(&slot, 2);
            }
            wake = std::min(wake, slot.deadline);
        }
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count();
        poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait + 1, 0, 100)));

        for (std::size_t i = 0; i < fds.size(); ++i) {
            Slot& slot = *owners[i].first;
            if (slot.state == Slot::State::Empty || !fds[i].revents)
                continue;
            WorkerProcess& p = *slot.process;
            if (owners[i].second != 0) {
                const std::string text = owners[i].second == 1 ? p.drainOutput() : p.drainErrors();
                if (setup_.log)
                    setup_.log->append(slot.number, owners[i].second == 1 ? "stdout" : "stderr", text);
                continue;
            }
            // Set when the worker is done for: why, or "" when its exit status says it.
            std::optional<std::string> ended;
            UnverifiableCause cause = UnverifiableCause::ProgramCrashed;
            if ((fds[i].revents & POLLOUT) && !p.flush())
                ended = std::string();  // its exit status says why
            if (!ended && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                std::uint8_t buffer[65536];
                while (true) {
                    const ssize_t n = read(p.channel(), buffer, sizeof buffer);
                    if (n > 0) {
                        slot.incoming.append(buffer, static_cast<std::size_t>(n));
                        continue;
                    }
                    if (n < 0 && errno == EINTR)
                        continue;
                    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                        ended = std::string();
                    break;
                }
                try {
                    handleMessages(slot);
                } catch (const Error& error) {
                    ended = std::string("broke the replay protocol (") + error.what() + ")";
                    cause = UnverifiableCause::ProgramBrokeProtocol;
                }
            }
            if (ended && slot.state != Slot::State::Empty)
                workerEnded(slot, *ended, cause);
        }
        for (Slot& slot : slots_)
            if (slot.state == Slot::State::Starting || slot.state == Slot::State::Busy)
                slot.clock.sample();
        const Clock::time_point now = Clock::now();
        for (Slot& slot : slots_) {
            if (slot.state == Slot::State::Empty || now < slot.deadline)
                continue;
            // The budget is of the program's time: what this machine stalled is given back.
            if (slot.state == Slot::State::Starting || slot.state == Slot::State::Busy) {
                const double charged = slot.clock.chargedSeconds();
                if (charged < slot.budget) {
                    slot.deadline = after(slot.budget - charged);
                    continue;
                }
            }
            const double uncharged = slot.clock.unchargedSeconds();
            const std::string stalled = uncharged < 0.05 ? std::string()
                                                          : ", not counting " + secondsText(uncharged) +
                                                                " s the worker was stopped or waiting for a CPU on the auditor's machine";
            if (slot.state == Slot::State::Closing)
                workerEnded(slot, "", UnverifiableCause::ProgramCrashed);
            else if (slot.state == Slot::State::Starting)
                workerEnded(slot, "exceeded its time budget of " + secondsText(slot.budget) + " s" + stalled,
                            UnverifiableCause::ProgramExceededTime);
            else
                workerEnded(slot, "exceeded its time budget of " + secondsText(slot.budget) + " s (" + slot.basis + stalled + ")",
                            UnverifiableCause::ProgramExceededTime);
        }
    }
}

}  // namespace zkdv::worker
