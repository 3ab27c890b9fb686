// Ports of torch.optim.lr_scheduler's cosine schedules: CosineAnnealingLR's chainable
// get_lr() (which differs from its closed form in the last bits) and
// CosineAnnealingWarmRestarts, whose step() without an epoch counts T_cur and T_i up and whose
// get_lr() is closed in them. Both call the C library's cos, as Python's math.cos does.

#include <cmath>

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {

// Python's math.pi.
constexpr double kPi = 3.141592653589793;

class CosineAnnealingLR : public LrSchedule {
public:
    CosineAnnealingLR(const ScheduleArguments& a)
        : LrSchedule("CosineAnnealingLR", a.baseLr(), true), tMax_(a.number("T_max")), etaMin_(a.number("eta_min"))
    {
        if (tMax_ == 0.0)
            a.refuse("T_max", "a non-zero number");
    }

protected:
    double lr(std::uint64_t epochCount, double current, double base) const override
    {
        if (epochCount == 0)
            return current;
        const double epoch = static_cast<double>(epochCount);
        // Where cos(pi (epoch - 1) / T_max) is -1 the ratio below would divide by zero; torch
        // adds the half-cycle's step instead.
        if (pythonModulo(epoch - 1.0 - tMax_, 2.0 * tMax_) == 0.0)
            return current + (base - etaMin_) * (1.0 - std::cos(kPi / tMax_)) / 2.0;
        return (1.0 + std::cos(kPi * epoch / tMax_)) / (1.0 + std::cos(kPi * (epoch - 1.0) / tMax_)) * (current - etaMin_) + etaMin_;
    }

private:
    double tMax_;
    double etaMin_;
};

class CosineAnnealingWarmRestarts : public LrSchedule {
public:
    CosineAnnealingWarmRestarts(const ScheduleArguments& a)
        : LrSchedule("CosineAnnealingWarmRestarts", a.baseLr(), true), t0_(a.integer("T_0")), tMult_(a.integer("T_mult")), etaMin_(a.number("eta_min"))
    {
        if (t0_ <= 0)
            a.refuse("T_0", "a positive integer");
        if (tMult_ < 1)
            a.refuse("T_mult", "an integer of at least 1");
    }

protected:
    double lr(std::uint64_t epoch, double, double base) const override
    {
        // step() without an epoch: T_cur counts up from 0 and, on reaching T_i, starts over
        // while T_i grows by T_mult. After `epoch` steps that is the position inside the
        // cycle that holds `epoch`, found in O(log epoch) cycles.
        std::uint64_t cur = epoch, length = static_cast<std::uint64_t>(t0_);
        if (tMult_ == 1)
            cur %= length;
        else
            while (cur >= length) {
                cur -= length;
                length *= static_cast<std::uint64_t>(tMult_);
            }
        return etaMin_ + (base - etaMin_) * (1.0 + std::cos(kPi * static_cast<double>(cur) / static_cast<double>(length))) / 2.0;
    }

private:
    std::int64_t t0_;
    std::int64_t tMult_;
    double etaMin_;
};

}  // namespace

std::unique_ptr<ScheduleContract> makeCosineAnnealingLR(const ScheduleArguments& a) { return std::make_unique<CosineAnnealingLR>(a); }
std::unique_ptr<ScheduleContract> makeCosineAnnealingWarmRestarts(const ScheduleArguments& a)
{
    return std::make_unique<CosineAnnealingWarmRestarts>(a);
}

}  // namespace zkdv::schedule
