#include "resume_point.h"

#include "zkdv/recorder/recorder.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/tape/resume_link.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/snapshot_record.h"
#include "zkdv/tensor/torch_tensors.h"

namespace zkdv {

namespace {

// Where the tape's last snapshot sits, read again once the scan has verified the whole tape.
class LastSnapshot : public TapeVisitor {
public:
    void onSnapshot(const SnapshotRecord&, const RecordLocation& location) override
    {
        ref = RecordRef{location.index, location.offset, location.frameSize, location.digest};
    }
    RecordRef ref;
};

}  // namespace

ResumePoint ResumePoint::read(const std::string& path)
{
    ResumePoint point;
    point.path_ = path;
    LastSnapshot last;
    try {
        point.summary_ = scanTape(path, &last);
    } catch (const Error& error) {
        throw RecorderError("cannot resume from " + path + ": " + error.what());
    }
    const TapeSummary& summary = point.summary_;
    if (summary.status != TapeStatus::Sealed)
        throw RecorderError("cannot resume from " + path + ": the tape is " + std::string(tapeStatusName(summary.status)) +
                            (summary.problem ? " (" + summary.problem->describe() + ")" : std::string()) +
                            "; a run resumes from a sealed tape, the one its checkpoint was saved with");
    if (!summary.finalStateOnTape || !summary.finalStateDigest)
        throw RecorderError("cannot resume from " + path + ": the tape (format 1." + std::to_string(summary.formatMinor) +
                            ") does not hold the state after its last transaction; a resumed tape must start from a recorded state");
    RecordReader reader(path);
    SafetensorsView view;
    view.reparse(reader.payload(last.ref, tape::RecordType::Snapshot));
    const SnapshotRecord snapshot = SnapshotRecord::parse(view, *summary.root);
    for (const auto* list : {&snapshot.parameters, &snapshot.buffers, &snapshot.stateSlots})
        for (const TensorView* tensor : *list) {
            point.names_.push_back(tensor->name);
            point.tensors_.push_back(tensorFromView(*tensor));
        }
    return point;
}

ResumedTape ResumePoint::continueWith(const RootRecord& root, const std::vector<std::string>& names, const std::vector<at::Tensor>& state) const
{
    const RootRecord& previous = *summary_.root;
    RootRecord resumed = root;
    resumed.resumes = ResumedTape{summary_.chainHead, summary_.fileSize,
                                  (previous.resumes ? previous.resumes->transactionsBefore : 0) + summary_.transactionCount,
                                  *summary_.finalStateDigest};
    const TapeEnd end{previous, summary_.chainHead, summary_.fileSize, summary_.transactionCount, true, summary_.finalStateDigest,
                      summary_.lastScheduleEpoch, summary_.lastGradScalerStep};
    if (const std::string problem = resumeLinkProblem(end, resumed); !problem.empty())
        throw RecorderError("cannot resume from " + path_ + ": the new tape would not continue it: " + problem);
    // The link takes the final state's digest on trust; the state itself is compared here,
    // tensor by tensor, so that a difference is named.
    requireSameState(names, state);
    return *resumed.resumes;
}

void ResumePoint::requireSameState(const std::vector<std::string>& names, const std::vector<at::Tensor>& state) const
{
    const std::string refused = "cannot resume from " + path_ + ": ";
    for (std::size_t i = 0; i < std::max(names.size(), names_.size()); ++i) {
        if (i >= names.size())
            throw RecorderError(refused + "the tape's final state holds " + names_[i] + ", which the model and optimizer do not have now (load the "
                                "optimizer's state_dict from the checkpoint saved with that tape)");
        if (i >= names_.size() || names[i] != names_[i])
            throw RecorderError(refused + "the state to record holds " + names[i] + " where the tape's final state holds " +
                                (i < names_.size() ? names_[i] : std::string("nothing more")) +
                                " (load the model's and the optimizer's state_dict from the checkpoint saved with that tape)");
        const at::Tensor here = state[i].detach().to(at::kCPU).contiguous();
        const at::Tensor& there = tensors_[i];
        if (bitwiseEqual(here, there))
            continue;
        std::string how;
        if (here.scalar_type() != there.scalar_type() || here.sizes() != there.sizes()) {
            how = "is " + std::string(c10::toString(here.scalar_type())) + " " + c10::str(here.sizes()) + ", the tape's " +
                  std::string(c10::toString(there.scalar_type())) + " " + c10::str(there.sizes());
        } else {
            const std::int64_t differing = at::ne(here, there).sum().item<std::int64_t>();
            how = differing == 0 ? std::string("differs from the tape's in its bits (a signed zero or a NaN's payload)")
                                 : "differs from the tape's in " + std::to_string(differing) + " of " + std::to_string(here.numel()) + " elements";
        }
        throw RecorderError(refused + names[i] + " " + how +
                            ": the model and optimizer must be in the state the tape ended in (load their state_dicts from the checkpoint "
                            "saved right after that tape was sealed)");
    }
}

}  // namespace zkdv
