// CosineAnnealingWarmRestarts: port of torch.optim.lr_scheduler.CosineAnnealingWarmRestarts.
// Its get_lr() is closed in T_cur and T_i, which its step() without an epoch counts: T_cur
// goes up by one and, on reaching T_i, starts over from 0 while T_i grows T_mult times (torch
// 1.13 subtracts T_i, 2.x takes T_cur % T_i: the same for steps of one). Both are derived here
// from the epoch alone, so that a step costs O(log epoch) whatever epoch the auditor asks.

#include <cmath>

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class CosineAnnealingWarmRestarts : public LrSchedule {
public:
    explicit CosineAnnealingWarmRestarts(const ScheduleArguments& a)
        : LrSchedule(a, true), t0_(a.integer("T_0")), tMult_(a.integer("T_mult")), etaMin_(a.real("eta_min"))
    {
        if (t0_ <= 0)
            a.refuse("T_0", "a positive integer (torch's constructor refuses it)");
        if (tMult_ < 1)
            a.refuse("T_mult", "an integer of at least 1 (torch's constructor refuses it)");
    }

protected:
    double lr(std::uint64_t epoch, double, double base) const override
    {
        // T_cur and T_i after `epoch` steps from T_cur = 0, T_i = T_0: the place of `epoch` in
        // the cycle that holds it. Cycles grow at least twofold with T_mult > 1, so at most 64
        // of them; T_i, a Python int, may pass 2^64 in the last one.
        unsigned __int128 cur = epoch, length = static_cast<unsigned __int128>(t0_);
        if (tMult_ == 1)
            cur %= length;
        else
            while (cur >= length) {
                cur -= length;
                length *= static_cast<unsigned __int128>(tMult_);
            }
        const double angle = kPythonPi * static_cast<double>(static_cast<std::uint64_t>(cur)) / static_cast<double>(length);
        return etaMin_ + (base - etaMin_) * (1.0 + std::cos(angle)) / 2.0;
    }

    // Torch 1.13's step(0) sets T_cur 0 and T_i T_0; 2.x's _update_lr(0) reads T_cur, which is
    // 0 in a scheduler that has not been stepped before its milestone: epoch 0's rate either way.
    double restartLr(double base) const override { return lr(0, base, base); }

private:
    std::int64_t t0_;
    std::int64_t tMult_;
    double etaMin_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeCosineAnnealingWarmRestarts(const ScheduleArguments& a)
{
    return std::make_unique<CosineAnnealingWarmRestarts>(a);
}

}  // namespace zkdv::schedule
