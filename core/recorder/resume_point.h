#pragma once
// The end of the tape a resumed recording continues (docs/tape-format.md section 3.4): its
// identity, its root and the state it ended in, which the new tape must start from.

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "zkdv/tape/resumed_tape.h"
#include "zkdv/tape/tape_scanner.h"

namespace zkdv {

class ResumePoint {
public:
    // Reads and verifies the tape at `path`; RecorderError unless it is sealed, with its final
    // state on the tape.
    static ResumePoint read(const std::string& path);

    // What the new tape's root names (member resumes), after refusing, with RecorderError
    // naming the first difference, unless `root` runs the same model layout, optimizer and
    // program as the tape it continues, and `state` (canonical names and tensors) is the state
    // that tape ended in, tensor by tensor.
    ResumedTape continueWith(const RootRecord& root, const std::vector<std::string>& names, const std::vector<at::Tensor>& state) const;

    const std::string& path() const { return path_; }

private:
    void requireSameState(const std::vector<std::string>& names, const std::vector<at::Tensor>& state) const;

    std::string path_;
    TapeSummary summary_;
    std::vector<std::string> names_;  // the final snapshot's tensors, in canonical order
    std::vector<at::Tensor> tensors_;
};

}  // namespace zkdv
