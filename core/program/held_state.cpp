// The sealed program holds no state but its parameters and buffers: every attribute of every
// module and object it holds is walked, through lists, dicts, tuples and nested modules, and
// every tensor found must be one of the prepared parameters or buffers themselves. State kept
// anywhere else is in no snapshot, so a step could use it while every replay agrees.

#include <set>
#include <string>

#include "step_graph.h"
#include "zkdv/graph/exported_graph.h"
#include "zkdv/program/sealed_program.h"

namespace zkdv {

namespace {

constexpr int kMaxDepth = 64;

class HeldStateWalk {
public:
    explicit HeldStateWalk(const torch::jit::Module& module)
    {
        for (const auto& p : module.named_parameters(true))
            prepared_.insert(p.value.unsafeGetTensorImpl());
        for (const auto& b : module.named_buffers(true))
            prepared_.insert(b.value.unsafeGetTensorImpl());
    }

    void walk(const c10::IValue& value, const std::string& path, int depth)
    {
        if (depth > kMaxDepth)
            throw ProgramError("the sealed program's attribute " + path + " nests more than " + std::to_string(kMaxDepth) + " deep");
        if (value.isTensor()) {
            const at::Tensor& tensor = value.toTensor();
            if (tensor.defined() && !prepared_.count(tensor.unsafeGetTensorImpl()))
                captured_ += (captured_.empty() ? "" : ", ") + path;
        } else if (value.isObject()) {
            const auto& object = value.toObjectRef();
            if (!objects_.insert(&object).second)
                return;
            const auto type = object.type();
            for (std::size_t slot = 0; slot < type->numAttributes(); ++slot)
                walk(object.getSlot(slot), (path.empty() ? "" : path + ".") + type->getAttributeName(slot), depth + 1);
        } else if (value.isList()) {
            const auto list = value.toListRef();
            for (std::size_t i = 0; i < list.size(); ++i)
                walk(list[i], path + "[" + std::to_string(i) + "]", depth + 1);
        } else if (value.isTuple()) {
            const auto& items = value.toTupleRef().elements();
            for (std::size_t i = 0; i < items.size(); ++i)
                walk(items[i], path + "[" + std::to_string(i) + "]", depth + 1);
        } else if (value.isGenericDict()) {
            std::size_t i = 0;
            for (const auto& entry : value.toGenericDict()) {
                walk(entry.key(), path + ".key[" + std::to_string(i) + "]", depth + 1);
                walk(entry.value(), path + "[" + (entry.key().isString() ? "\"" + entry.key().toStringRef() + "\"" : std::to_string(i)) + "]", depth + 1);
                ++i;
            }
        } else if (!(value.isNone() || value.isBool() || value.isInt() || value.isDouble() || value.isComplexDouble() || value.isString() ||
                     value.isDevice() || value.isEnum())) {
            // A generator, future, stream or opaque object is state no check can read.
            throw ProgramError("the sealed program holds a " + value.tagKind() + " in " + path +
                               "; a program holds only its parameters, buffers and plain values");
        }
    }

    const std::string& captured() const { return captured_; }

private:
    std::set<const c10::TensorImpl*> prepared_;
    std::set<const c10::ivalue::Object*> objects_;
    std::string captured_;
};

}  // namespace

void checkHeldState(const torch::jit::Module& module)
{
    HeldStateWalk walk(module);
    walk.walk(module._ivalue(), "", 0);
    if (!walk.captured().empty())
        throw ProgramError(capturedTensorStateRefusal(walk.captured()));
}

}  // namespace zkdv
