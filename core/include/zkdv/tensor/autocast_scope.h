#pragma once
// The autocast (mixed precision) state of this thread, read where the recorder sees a forward
// pass and set again where the replay runs it (tape format 1.7, section 5.5). torch.autocast
// keeps it per thread, per device type: whether it is on and the dtype it casts to.

#include "zkdv/tape/autocast_setting.h"

namespace zkdv {

// The device types whose autocast is on in this thread, with their dtypes; devices other than
// "cpu" and "cuda" come back named as torch names them (the recorder refuses those).
AutocastSetting currentAutocast();

// Sets `setting` for this thread (every other device type off) and restores what was there;
// clears the cast cache when it leaves, as torch.autocast does at its outermost exit.
class AutocastScope {
public:
    explicit AutocastScope(const AutocastSetting& setting);
    ~AutocastScope();
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

private:
    bool active_ = false;
    bool cpu_ = false, cuda_ = false;
    DType cpuDtype_ = DType::BF16, cudaDtype_ = DType::F16;
};

}  // namespace zkdv
