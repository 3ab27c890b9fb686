#include "zkdv/recorder/sealed_program.h"

#include <set>
#include <sstream>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/serialization/import.h>

namespace zkdv {

namespace {

// Substrings of operator names that draw random numbers (the seed's `lower` list).
constexpr const char* kRandomMarkers[] = {"bernoulli", "dropout", "exponential", "multinomial", "normal", "rand", "uniform", "rrelu"};

bool isRandom(const std::string& op)
{
    for (const char* marker : kRandomMarkers)
        if (op.find(marker) != std::string::npos)
            return true;
    return false;
}

// dropout(input, p, train) with a constant train=False draws nothing.
bool isInferenceDropout(const torch::jit::Node* node)
{
    const std::string op = node->kind().toQualString();
    if (op.find("dropout") == std::string::npos || node->inputs().size() < 3)
        return false;
    auto train = torch::jit::toIValue(node->inputs()[2]);
    return train && train->isBool() && !train->toBool();
}

void collectRandomOps(torch::jit::Block* block, std::set<std::string>& found)
{
    for (torch::jit::Node* node : block->nodes()) {
        const std::string op = node->kind().toQualString();
        if (op.rfind("aten::", 0) == 0 && isRandom(op.substr(6)) && !isInferenceDropout(node))
            found.insert(op);
        if (node->kind() == c10::prim::Constant && node->output()->type()->kind() == c10::TypeKind::TensorType)
            found.insert("tensor constant");
        for (torch::jit::Block* inner : node->blocks())
            collectRandomOps(inner, found);
    }
}

}  // namespace

void checkSealedProgram(const torch::jit::Module& module)
{
    auto method = module.find_method("training_step");
    if (!method)
        throw ProgramError("the sealed program has no training_step method; define training_step(self, batch: List[Tensor]) -> Tensor returning the loss");
    const c10::FunctionSchema& schema = method->function().getSchema();
    if (schema.arguments().size() != 2 || schema.arguments()[1].type()->str() != "Tensor[]" || schema.returns().size() != 1 ||
        schema.returns()[0].type()->kind() != c10::TypeKind::TensorType)
        throw ProgramError("training_step must be declared training_step(self, batch: List[Tensor]) -> Tensor, found " + c10::toString(schema));

    // Tensors the program holds must be exactly its parameters and buffers.
    std::set<std::string> prepared;
    for (const auto& p : module.named_parameters(true))
        prepared.insert(p.name);
    for (const auto& b : module.named_buffers(true))
        prepared.insert(b.name);
    std::string captured;
    for (const auto& attribute : module.named_attributes(true))
        if (attribute.value.isTensor() && !prepared.count(attribute.name))
            captured += (captured.empty() ? "" : ", ") + attribute.name;
    if (!captured.empty())
        throw ProgramError("attested Torch code captured unprepared tensor state (" + captured +
                           "); register it as a parameter or buffer of the sealed program, or pass it in the batch");

    auto graph = method->graph()->copy();
    torch::jit::Inline(*graph);
    std::set<std::string> random;
    collectRandomOps(graph->block(), random);
    if (random.count("tensor constant")) {
        random.erase("tensor constant");
        if (random.empty())
            throw ProgramError("training_step holds a tensor constant; register it as a buffer of the sealed program or pass it in the batch");
    }
    if (!random.empty()) {
        std::string names;
        for (const std::string& op : random)
            names += (names.empty() ? "" : ", ") + op;
        throw ProgramError("attested Torch code contains random operations (" + names +
                           "); generate randomness outside the transition and include it in the prepared transaction batch");
    }
}

SealedProgram sealProgram(const torch::jit::Module& module)
{
    checkSealedProgram(module);
    std::ostringstream out;
    module.save(out);
    const std::string text = out.str();
    SealedProgram program;
    program.bytes.assign(text.begin(), text.end());
    program.sha256 = Sha256::of(ByteSpan(program.bytes));
    return program;
}

torch::jit::Module loadSealedProgram(const std::vector<std::uint8_t>& bytes, const std::string& device)
{
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    return torch::jit::load(in, c10::Device(device));
}

}  // namespace zkdv
