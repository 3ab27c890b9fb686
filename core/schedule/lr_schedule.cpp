#include "lr_schedule.h"

namespace zkdv::schedule {

ScheduledValues LrSchedule::step(std::uint64_t epoch, const ScheduledValues& current) const
{
    if (current.size() != 1 || current[0].size() != baseLr_.size())
        throw ScheduleError(kind_ + ": a step takes the lr of " + std::to_string(baseLr_.size()) + " parameter groups, one option (lr); it was given " +
                            std::to_string(current.size()) + " options" +
                            (current.empty() ? std::string() : " of " + std::to_string(current[0].size()) + " groups"));
    ScheduledValues next = current;
    for (std::size_t g = 0; g < baseLr_.size(); ++g)
        next[0][g] = lr(epoch, current[0][g], baseLr_[g]);
    return next;
}

}  // namespace zkdv::schedule
