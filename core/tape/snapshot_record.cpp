#include "zkdv/tape/snapshot_record.h"

#include <charconv>

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/state_digest.h"
#include "zkdv/util/error.h"

namespace zkdv {

namespace {
[[noreturn]] void fail(const std::string& message) { throw FormatError("snapshot record: " + message); }

void expectSpec(const TensorView& tensor, const TensorSpec& spec)
{
    if (tensor.dtype != spec.dtype || tensor.shape != spec.shape)
        fail(tensor.name + ": dtype and shape differ from the model layout");
}
}  // namespace

std::string parameterTensorName(std::string_view parameter) { return "param/" + std::string(parameter); }
std::string bufferTensorName(std::string_view buffer) { return "buffer/" + std::string(buffer); }
std::string stateTensorName(std::string_view parameter, std::string_view slot)
{
    return "state/" + std::string(parameter) + "/" + std::string(slot);
}

Digest SnapshotRecord::stateDigest() const
{
    StateDigest digest;
    for (const auto* list : {&parameters, &buffers, &stateSlots})
        for (const TensorView* tensor : *list)
            digest.add(tensor->name, tensor->dtype, tensor->shape, tensor->data);
    return digest.finish();
}

SnapshotRecord SnapshotRecord::parse(const SafetensorsView& view, const RootRecord& root)
{
    if (view.metadataValue("zkdv.record") != "snapshot")
        fail("metadata \"zkdv.record\" must be \"snapshot\"");
    SnapshotRecord record;
    std::string_view text = view.metadataValue("before_transaction");
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), record.beforeTransaction);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
        fail("metadata \"before_transaction\" must be a decimal integer, found \"" + std::string(text) + "\"");

    const auto& tensors = view.tensors();
    std::size_t next = 0;
    auto expectNext = [&](const std::string& name) -> const TensorView& {
        if (next >= tensors.size())
            fail("missing tensor \"" + name + "\"");
        const TensorView& tensor = tensors[next++];
        if (tensor.name != name)
            fail("expected tensor \"" + name + "\" in canonical state order, found \"" + tensor.name + "\"");
        return tensor;
    };
    for (const TensorSpec& spec : root.parameters) {
        const TensorView& tensor = expectNext(parameterTensorName(spec.name));
        expectSpec(tensor, spec);
        record.parameters.push_back(&tensor);
    }
    for (const TensorSpec& spec : root.buffers) {
        const TensorView& tensor = expectNext(bufferTensorName(spec.name));
        expectSpec(tensor, spec);
        record.buffers.push_back(&tensor);
    }
    // The optimizer slots: parameters in layout order, slots ascending within each.
    std::size_t parameter = 0;
    std::string previousSlot;
    for (; next < tensors.size(); ++next) {
        const TensorView& tensor = tensors[next];
        const std::string& name = tensor.name;
        bool matched = false;
        for (; parameter < root.parameters.size(); ++parameter, previousSlot.clear()) {
            std::string prefix = "state/" + root.parameters[parameter].name + "/";
            if (name.compare(0, prefix.size(), prefix) == 0 && name.size() > prefix.size()) {
                std::string slot = name.substr(prefix.size());
                // A parameter name may itself contain '/', so the prefix must leave a plain slot name.
                if (slot.find('/') != std::string::npos)
                    continue;
                if (!previousSlot.empty() && slot <= previousSlot)
                    fail("state slot \"" + name + "\" is out of canonical order");
                previousSlot = slot;
                matched = true;
                break;
            }
        }
        if (!matched)
            fail("unexpected tensor \"" + name + "\" (expected state/<parameter>/<slot> in layout order)");
        record.stateSlots.push_back(&tensor);
    }
    return record;
}

}  // namespace zkdv
