#include "small_root.h"

#include <string>
#include <string_view>

namespace zkdv::test {

RootRecord oneParameterRoot()
{
    RootRecord root;
    root.producerName = "test";
    root.producerVersion = "1";
    root.torchVersion = "2.15.0";
    root.parameters = {{"w", {2}, DType::F32}};
    root.optimizerContract = "SGD";
    root.optimizerGroups = {{{"w"}, R"({"lr":0.1})"}};
    return root;
}

RootRecord readAsMinor(const RootRecord& root, int minor, const std::function<void(nlohmann::json&)>& edit)
{
    nlohmann::json document = nlohmann::json::parse(root.toJson());
    document["format"]["minor"] = minor;
    if (edit)
        edit(document);
    const std::string text = document.dump();
    return RootRecord::parse(ByteSpan(std::string_view(text)));
}

}  // namespace zkdv::test
