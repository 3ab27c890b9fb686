#include "snapshot_models.h"

#include "file_bytes.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/snapshot_record.h"

namespace zkdv::test {

void SnapshotCopier::onSnapshot(const SnapshotRecord& snapshot, const RecordLocation&)
{
    Model& model = states[snapshot.beforeTransaction];
    auto copy = [&](const TensorView* view, const std::string& prefix) {
        model.push_back({view->name.substr(prefix.size()), view->dtype, view->shape, {view->data.begin(), view->data.end()}});
    };
    for (const TensorView* view : snapshot.parameters)
        copy(view, "param/");
    for (const TensorView* view : snapshot.buffers)
        copy(view, "buffer/");
}

void writeModel(const std::string& path, const Model& model)
{
    SafetensorsBuilder builder;
    builder.setMetadata("format", "pt");
    for (const Tensor& tensor : model)
        builder.add(tensor.name, tensor.dtype, tensor.shape, ByteSpan(tensor.bytes));
    writeAll(path, builder.toBytes());
}

}  // namespace zkdv::test
