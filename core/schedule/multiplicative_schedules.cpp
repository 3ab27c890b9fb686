// Ports of torch.optim.lr_scheduler's get_lr() for the schedules that multiply the current
// rate by a factor (StepLR, MultiStepLR, ExponentialLR, ConstantLR, LinearLR, PolynomialLR):
// the same in torch 1.13 and 2.x for a scheduler stepped once per call from its construction.
// Each expression keeps Python's order of operations; the folder is built without
// floating-point contraction (core/CMakeLists.txt), so no multiply-add is fused.

#include <cmath>
#include <map>

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {

class StepLR : public LrSchedule {
public:
    StepLR(const ScheduleArguments& a) : LrSchedule("StepLR", a.baseLr(), false), stepSize_(a.integer("step_size")), gamma_(a.number("gamma"))
    {
        if (stepSize_ <= 0)
            a.refuse("step_size", "a positive integer");
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        if (epoch == 0 || epoch % static_cast<std::uint64_t>(stepSize_) != 0)
            return current;
        return current * gamma_;
    }

private:
    std::int64_t stepSize_;
    double gamma_;
};

class MultiStepLR : public LrSchedule {
public:
    MultiStepLR(const ScheduleArguments& a) : LrSchedule("MultiStepLR", a.baseLr(), true), gamma_(a.number("gamma"))
    {
        // torch keeps a Counter: a milestone listed n times decays by gamma ** n there.
        for (std::int64_t milestone : a.integers("milestones")) {
            if (milestone < 0)
                a.refuse("milestones", "an array of non-negative integers");
            ++counts_[static_cast<std::uint64_t>(milestone)];
        }
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        const auto it = counts_.find(epoch);
        if (it == counts_.end())
            return current;
        return current * std::pow(gamma_, static_cast<double>(it->second));
    }

private:
    double gamma_;
    std::map<std::uint64_t, int> counts_;
};

class ExponentialLR : public LrSchedule {
public:
    ExponentialLR(const ScheduleArguments& a) : LrSchedule("ExponentialLR", a.baseLr(), false), gamma_(a.number("gamma")) {}

protected:
    double lr(std::uint64_t epoch, double current, double) const override { return epoch == 0 ? current : current * gamma_; }

private:
    double gamma_;
};

class ConstantLR : public LrSchedule {
public:
    ConstantLR(const ScheduleArguments& a)
        : LrSchedule("ConstantLR", a.baseLr(), false), factor_(a.number("factor")), totalIters_(a.integer("total_iters"))
    {
        if (factor_ < 0.0 || factor_ > 1.0)
            a.refuse("factor", "between 0 and 1");
        if (totalIters_ < 0)
            a.refuse("total_iters", "a non-negative integer");
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        if (epoch == 0)
            return current * factor_;
        if (epoch != static_cast<std::uint64_t>(totalIters_))
            return current;
        return current * (1.0 / factor_);
    }

private:
    double factor_;
    std::int64_t totalIters_;
};

class LinearLR : public LrSchedule {
public:
    LinearLR(const ScheduleArguments& a)
        : LrSchedule("LinearLR", a.baseLr(), false),
          start_(a.number("start_factor")),
          end_(a.number("end_factor")),
          totalIters_(a.integer("total_iters"))
    {
        if (start_ <= 0.0 || start_ > 1.0)
            a.refuse("start_factor", "greater than 0 and at most 1");
        if (end_ < 0.0 || end_ > 1.0)
            a.refuse("end_factor", "between 0 and 1");
        if (totalIters_ < 0)
            a.refuse("total_iters", "a non-negative integer");
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        if (epoch == 0)
            return current * start_;
        if (epoch > static_cast<std::uint64_t>(totalIters_))
            return current;
        const double total = static_cast<double>(totalIters_);
        const double before = static_cast<double>(epoch - 1);
        return current * (1.0 + (end_ - start_) / (total * start_ + before * (end_ - start_)));
    }

private:
    double start_, end_;
    std::int64_t totalIters_;
};

class PolynomialLR : public LrSchedule {
public:
    PolynomialLR(const ScheduleArguments& a)
        : LrSchedule("PolynomialLR", a.baseLr(), true), totalIters_(a.integer("total_iters")), power_(a.number("power"))
    {
        if (totalIters_ < 0)
            a.refuse("total_iters", "a non-negative integer");
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        if (epoch == 0 || epoch > static_cast<std::uint64_t>(totalIters_))
            return current;
        // Python's int / int is a true division, correctly rounded, as a double division is
        // for integers of this size.
        const double total = static_cast<double>(totalIters_);
        const double decay = std::pow((1.0 - static_cast<double>(epoch) / total) / (1.0 - static_cast<double>(epoch - 1) / total), power_);
        return current * decay;
    }

private:
    std::int64_t totalIters_;
    double power_;
};

}  // namespace

std::unique_ptr<ScheduleContract> makeStepLR(const ScheduleArguments& a) { return std::make_unique<StepLR>(a); }
std::unique_ptr<ScheduleContract> makeMultiStepLR(const ScheduleArguments& a) { return std::make_unique<MultiStepLR>(a); }
std::unique_ptr<ScheduleContract> makeExponentialLR(const ScheduleArguments& a) { return std::make_unique<ExponentialLR>(a); }
std::unique_ptr<ScheduleContract> makeConstantLR(const ScheduleArguments& a) { return std::make_unique<ConstantLR>(a); }
std::unique_ptr<ScheduleContract> makeLinearLR(const ScheduleArguments& a) { return std::make_unique<LinearLR>(a); }
std::unique_ptr<ScheduleContract> makePolynomialLR(const ScheduleArguments& a) { return std::make_unique<PolynomialLR>(a); }

}  // namespace zkdv::schedule
