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

class CyclicLR : public LrSchedule {
public:
    explicit CyclicLR(const ScheduleArguments& a)
        : LrSchedule(a, modeOf(a) != Mode::Triangular), mode_(modeOf(a)), totalSize_(a.real("total_size")), stepRatio_(a.real("step_ratio"))
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
        const nlohmann::json& cycle = a.json("cycle_momentum");
        if (cycle.is_object()) {
            const auto option = cycle.find("option");
            const auto maxIt = cycle.find("max_momentum"), baseIt = cycle.find("base_momentum");
            if (option == cycle.end() || (*option != "momentum" && *option != "betas[0]") || cycle.size() != 3 || maxIt == cycle.end() ||
                baseIt == cycle.end() || !maxIt->is_array() || !baseIt->is_array() || maxIt->size() != a.groups() || baseIt->size() != a.groups())
                a.refuse("cycle_momentum", "false, or {\"option\": \"momentum\" or \"betas[0]\", \"max_momentum\", \"base_momentum\"} of one "
                                           "number per parameter group");
            momentum_ = option->get<std::string>();
            for (std::size_t g = 0; g < a.groups(); ++g) {
                const nlohmann::json &m = (*maxIt)[g], &b = (*baseIt)[g];
                if (!m.is_number() || !b.is_number() || !std::isfinite(m.get<double>()) || !std::isfinite(b.get<double>()))
                    a.refuse("cycle_momentum", "an object of finite momenta");
                momenta_.push_back({m.get<double>(), b.get<double>()});
            }
        } else if (cycle != false) {
            a.refuse("cycle_momentum", "false, or the momentum it cycles {\"option\", \"max_momentum\", \"base_momentum\"}");
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

    std::vector<std::string> options() const override
    {
        if (momentum_.empty())
            return LrSchedule::options();
        return {"lr", momentum_};
    }
    ScheduledValues base() const override
    {
        ScheduledValues values = LrSchedule::base();
        if (!momentum_.empty()) {
            // The constructor sets each group's momentum to its max_momentum before step 0.
            values.emplace_back();
            for (const Momenta& m : momenta_)
                values.back().push_back(m.max);
        }
        return values;
    }
    ScheduledValues step(std::uint64_t epoch, const ScheduledValues& current) const override
    {
        if (momentum_.empty())
            return LrSchedule::step(epoch, current);
        if (current.size() != 2 || current[1].size() != momenta_.size())
            throw ScheduleError(kind() + ": a step takes lr and " + momentum_ + " of " + std::to_string(momenta_.size()) + " parameter groups");
        ScheduledValues next = LrSchedule::step(epoch, ScheduledValues{current[0]});
        const Place p = placeOf(epoch);
        next.emplace_back();
        for (const Momenta& m : momenta_) {
            const double height = (m.max - m.base) * p.scaleFactor;
            next[1].push_back(m.max - height * p.scale);
        }
        return next;
    }

private:
    enum class Mode { Triangular, Triangular2, ExpRange };
    struct Momenta {
        double max, base;
    };
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
    std::string momentum_;
    std::vector<Momenta> momenta_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeCyclicLR(const ScheduleArguments& a) { return std::make_unique<CyclicLR>(a); }

}  // namespace zkdv::schedule
