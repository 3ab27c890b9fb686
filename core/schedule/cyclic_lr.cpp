// CyclicLR: port of torch.optim.lr_scheduler.CyclicLR.get_lr(), the same in torch 1.13 and 2.x.
// Not chainable: each step's rate follows from the step alone, climbing from the base rate to
// max_lr over the first step_ratio of every cycle of total_size steps and back, its height
// scaled per cycle (triangular2: halved each cycle) or per step (exp_range: gamma ** step).
// With cycle_momentum the group's momentum (or betas[0]) moves the other way, from
// max_momentum down by the same fraction of its own height. A custom scale_fn is user code,
// which no description holds.

#include <cmath>

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class CyclicLR : public MomentumCyclingSchedule {
public:
    explicit CyclicLR(const ScheduleArguments& a)
        : MomentumCyclingSchedule(a, modeOf(a) != Mode::Triangular), mode_(modeOf(a)), totalSize_(a.real("total_size")), stepRatio_(a.real("step_ratio"))
    {
        if (!(totalSize_ > 0.0) || !std::isfinite(totalSize_))
            a.refuse("total_size", "a positive float, step_size_up + step_size_down");
        if (!(stepRatio_ > 0.0 && stepRatio_ <= 1.0))
            a.refuse("step_ratio", "step_size_up / total_size, in (0, 1]");
        const PythonNumber gamma = a.number("gamma");
        // An int gamma ** an int step is an exact Python int, which no double reproduces.
        if (gamma.isInteger() && gamma.asDouble() != 1.0)
            a.refuse("gamma", "a float (or 1)");
        gamma_ = gamma.asDouble();
        const std::vector<PythonNumber> maxLr = a.numbers("max_lr");
        if (maxLr.size() != a.groups())
            a.refuse("max_lr", "an array of one rate per parameter group (" + std::to_string(a.groups()) + ")");
        for (std::size_t g = 0; g < a.groups(); ++g) {
            maxLr_.push_back(maxLr[g].asDouble());
            for (std::size_t h = 0; h < g; ++h)
                if (a.baseLr()[h] == a.baseLr()[g] && maxLr_[h] != maxLr_[g])
                    a.refuse("max_lr", "the same for groups of the same base rate (a group's rates are found by its base)");
        }
    }

    double lr(std::uint64_t epoch, double, double base) const override
    {
        for (std::size_t g = 0; g < maxLr_.size(); ++g)
            if (baseLr(g) == base) {
                const Place p = placeOf(epoch);
                const double height = (maxLr_[g] - base) * p.scaleFactor;
                return base + height * p.scale;
            }
        throw ScheduleError(where(epoch).text() + ": a group of base rate " + std::to_string(base) + ", which the description does not hold");
    }
    double restartLr(double base) const override { return lr(0, base, base); }

    double momentum(std::uint64_t epoch, std::size_t group) const override
    {
        const Place p = placeOf(epoch);
        const double height = (cycledMomentum().max[group] - cycledMomentum().base[group]) * p.scaleFactor;
        return cycledMomentum().max[group] - height * p.scale;
    }

private:
    enum class Mode { Triangular, Triangular2, ExpRange };
    struct Place {
        double scaleFactor;  // how far up (or down) the cycle's slope
        double scale;        // scale_fn of the cycle, or of the step for exp_range
    };

    static Mode modeOf(const ScheduleArguments& a)
    {
        const nlohmann::json& mode = a.json("mode");
        if (mode == "triangular")
            return Mode::Triangular;
        if (mode == "triangular2")
            return Mode::Triangular2;
        if (mode == "exp_range")
            return Mode::ExpRange;
        a.refuse("mode", "\"triangular\", \"triangular2\" or \"exp_range\" (a custom scale_fn is user code, recorded as recorded)");
    }

    double baseLr(std::size_t group) const { return LrSchedule::base()[0][group]; }

    Place placeOf(std::uint64_t epoch) const
    {
        const StepPlace at = where(epoch);
        const double steps = static_cast<double>(epoch);
        // cycle = math.floor(1 + last_epoch / total_size); x = 1.0 + last_epoch / total_size - cycle
        const double fraction = pythonDivide(steps, totalSize_, at);
        const double cycle = std::floor(1.0 + fraction);
        const double x = (1.0 + fraction) - cycle;
        const double scaleFactor = x <= stepRatio_ ? pythonDivide(x, stepRatio_, at) : pythonDivide(x - 1.0, stepRatio_ - 1.0, at);
        double scale = 1.0;
        if (mode_ == Mode::Triangular2)
            scale = pythonDivide(1.0, pythonPower(2.0, cycle - 1.0, at), at);  // 1 / (2.0 ** (cycle - 1))
        else if (mode_ == Mode::ExpRange)
            scale = pythonPower(gamma_, steps, at);  // gamma ** last_epoch (scale_mode "iterations")
        return {scaleFactor, scale};
    }

    Mode mode_;
    double totalSize_;
    double stepRatio_;
    double gamma_ = 1.0;
    std::vector<double> maxLr_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeCyclicLR(const ScheduleArguments& a) { return std::make_unique<CyclicLR>(a); }

}  // namespace zkdv::schedule
