#include "zkdv/workflow/replay_precheck.h"

#include "zkdv/graph/exported_graph.h"
#include "zkdv/store/case_store.h"

namespace zkdv {

std::string whyReplayVerifiesNothing(const CaseTape& tape, bool programSupplied)
{
    if (tape.programKind != "torchscript" && tape.programKind != kExportedGraphKind)
        return "the tape's program (" + tape.programKind + ") cannot be re-executed, so no transaction can be compared with the tape";
    if (!tape.programPresent && !programSupplied)
        return "the case lacks the tape's sealed program (" + tape.programSha256 + "); add the program file to the case first";
    return {};
}

}  // namespace zkdv
