#pragma once
// How a step scaled a micro-batch's loss before differentiating it (tape format 1.7, section
// 5.4): gradient accumulation divides each micro-batch's loss by their number, as the training
// loop wrote it (`loss / 4`), and the replay differentiates the same scaled loss.

#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

struct LossScale {
    enum class Op { None, Divide, Multiply };
    Op op = Op::None;
    double by = 1.0;
    // Whether the loop's number was a Python int (`loss / 4`), which torch wraps as an integer
    // scalar, or a float (`loss / 4.0`, `loss * 0.25`).
    bool integral = false;

    // "/ 4", "* 0.25", or "" for none.
    std::string describe() const;
    // The loss widened to double, scaled as the step scaled it (for display: the step's loss).
    double apply(double loss) const;
    bool operator==(const LossScale& other) const { return op == other.op && by == other.by && integral == other.integral; }
};

// The metadata "loss_scales": one entry per micro-batch, null or {"op": "div"|"mul", "by": n}.
std::string lossScalesJson(const std::vector<LossScale>& scales);
// Reads it back for `count` micro-batches; throws FormatError naming the entry.
std::vector<LossScale> parseLossScales(std::string_view json, std::size_t count);
// The reason a scale cannot be recorded (a non-finite or zero divisor), empty when it can.
std::string lossScaleProblem(const LossScale& scale);

}  // namespace zkdv
