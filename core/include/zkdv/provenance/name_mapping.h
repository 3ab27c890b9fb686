#pragma once
// How the tensor names of a model file relate to a tape's layout names: the same, or one
// side with a common prefix the other lacks ("model.fc.weight" for "fc.weight"), as happens
// when a model is saved from a wrapper or loaded into one.

#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

struct NameMapping {
    enum class Kind {
        Same,              // model name = layout name
        ModelAddsPrefix,   // model name = prefix + layout name
        ModelDropsPrefix,  // layout name = prefix + model name
    };
    Kind kind = Kind::Same;
    std::string prefix;  // ends with '.'; empty for Same

    // The model's name for a layout name; "" when the layout name lacks a dropped prefix.
    std::string modelName(std::string_view layoutName) const;
    // "the same names", "model names are \"model.\" + the tape's", …
    std::string describe() const;
};

// The mapping under which the most layout names are found among `modelNames`: the same names,
// or one prefix ending in '.' added or dropped. Names are never changed otherwise. Throws
// Error naming the candidates when two mappings find equally many (the most), since then the
// model file does not say which tensors are the tape's; the same names when none finds any.
NameMapping chooseNameMapping(const std::vector<std::string>& layoutNames, const std::vector<std::string>& modelNames);

}  // namespace zkdv
