#include "zkdv/tape/root_record.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "zkdv/tape/scheduled_option.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {
using nlohmann::json;

[[noreturn]] void fail(const std::string& message) { throw FormatError("root record: " + message); }

const json& member(const json& object, const char* name, const char* where)
{
    auto it = object.find(name);
    if (it == object.end())
        fail(std::string("missing member ") + where + "." + name);
    return *it;
}

std::string stringMember(const json& object, const char* name, const char* where)
{
    const json& value = member(object, name, where);
    if (!value.is_string())
        fail(std::string(where) + "." + name + " must be a string, found " + value.type_name());
    return value.get<std::string>();
}

std::int64_t integerMember(const json& object, const char* name, const char* where, std::int64_t min)
{
    const json& value = member(object, name, where);
    if (!value.is_number_integer())
        fail(std::string(where) + "." + name + " must be an integer, found " + value.dump());
    std::int64_t number = value.get<std::int64_t>();
    if (number < min)
        fail(std::string(where) + "." + name + " must be at least " + std::to_string(min) + ", found " + std::to_string(number));
    return number;
}

double probabilityMember(const json& object, const char* name)
{
    const json& value = member(object, name, "sampling");
    if (!value.is_number())
        fail(std::string("sampling.") + name + " must be a number, found " + value.dump());
    double p = value.get<double>();
    if (!(p >= 0.0 && p <= 1.0))
        fail(std::string("sampling.") + name + " must lie in [0, 1], found " + value.dump());
    return p;
}

Digest digestMember(const json& object, const char* name, const char* where)
{
    const std::string text = stringMember(object, name, where);
    auto digest = digestFromHex(text);
    if (!digest)
        fail(std::string(where) + "." + name + " must be 64 hex digits, found \"" + text + "\"");
    return *digest;
}

// JSON integers beyond 2^53 do not survive every reader; no tape is that long.
constexpr std::int64_t kMaxCount = std::int64_t(1) << 53;

ResumedTape parseResumedTape(const json& resumes)
{
    if (!resumes.is_object())
        fail("resumes must be an object, found " + resumes.dump());
    for (const auto& [key, value] : resumes.items())
        if (key != "chain_head" && key != "size" && key != "transactions" && key != "state_digest")
            fail("resumes has an unknown member \"" + key + "\"");
    ResumedTape tape;
    tape.chainHead = digestMember(resumes, "chain_head", "resumes");
    tape.stateDigest = digestMember(resumes, "state_digest", "resumes");
    const std::int64_t size = integerMember(resumes, "size", "resumes", 1);
    const std::int64_t before = integerMember(resumes, "transactions", "resumes", 1);
    if (size > kMaxCount || before > kMaxCount)
        fail("resumes.size and resumes.transactions must be at most 2^53, found " + std::to_string(size) + " and " + std::to_string(before));
    tape.size = static_cast<std::uint64_t>(size);
    tape.transactionsBefore = static_cast<std::uint64_t>(before);
    return tape;
}

// The algorithm follows from the version: sha256-merkle-v1 in 1.12 and 1.13, sha256-merkle-v2
// (the root commits the count) from 1.14 on; a 1.14 tape naming v1 would bind a count nobody
// committed, and a 1.13 tape naming v2 is not one a 1.13 writer made.
DatasetDeclaration parseDatasetDeclaration(const json& dataset, int formatMinor)
{
    if (!dataset.is_object())
        fail("dataset must be an object, found " + dataset.dump());
    for (const auto& [key, value] : dataset.items())
        if (key != "algorithm" && key != "root" && key != "leaf_count" && key != "sample_digest")
            fail("dataset has an unknown member \"" + key + "\"");
    DatasetDeclaration declaration;
    declaration.algorithm = formatMinor >= tape::kCountedDatasetMinor ? MerkleAlgorithm::V2 : MerkleAlgorithm::V1;
    const std::string_view expected = merkleAlgorithmName(declaration.algorithm);
    const std::string algorithm = stringMember(dataset, "algorithm", "dataset");
    if (algorithm != expected)
        fail("dataset.algorithm must be \"" + std::string(expected) + "\" in a tape of format 1." + std::to_string(formatMinor) + ", found \"" +
             algorithm + "\"" +
             (declaration.algorithm == MerkleAlgorithm::V2 ? " (its root would not commit the count of samples)" : std::string()));
    if (stringMember(dataset, "sample_digest", "dataset") != "zkdv-sample-v1")
        fail("dataset.sample_digest must be \"zkdv-sample-v1\"");
    declaration.root = digestMember(dataset, "root", "dataset");
    const std::int64_t leaves = integerMember(dataset, "leaf_count", "dataset", 1);
    if (leaves > kMaxCount)
        fail("dataset.leaf_count must be at most 2^53, found " + std::to_string(leaves));
    declaration.leafCount = static_cast<std::uint64_t>(leaves);
    return declaration;
}

json specsToJson(const std::vector<TensorSpec>& specs)
{
    json array = json::array();
    for (const TensorSpec& spec : specs)
        array.push_back({{"name", spec.name}, {"shape", spec.shape}, {"dtype", std::string(dtypeName(spec.dtype))}});
    return array;
}

std::vector<TensorSpec> specsFromJson(const json& array, const char* where)
{
    if (!array.is_array())
        fail(std::string(where) + " must be an array");
    std::vector<TensorSpec> specs;
    for (std::size_t i = 0; i < array.size(); ++i) {
        const json& item = array[i];
        std::string at = std::string(where) + "[" + std::to_string(i) + "]";
        if (!item.is_object())
            fail(at + " must be an object");
        TensorSpec spec;
        spec.name = stringMember(item, "name", at.c_str());
        if (spec.name.empty())
            fail(at + ".name is empty");
        std::string dtype = stringMember(item, "dtype", at.c_str());
        auto parsed = dtypeFromName(dtype);
        if (!parsed)
            fail(at + ".dtype: unknown dtype \"" + dtype + "\"");
        spec.dtype = *parsed;
        const json& shape = member(item, "shape", at.c_str());
        if (!shape.is_array())
            fail(at + ".shape must be an array");
        for (const json& dim : shape) {
            if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0)
                fail(at + ".shape holds " + dim.dump() + ", expected non-negative integers");
            spec.shape.push_back(dim.get<std::int64_t>());
        }
        std::int64_t bytes = static_cast<std::int64_t>(dtypeSize(spec.dtype));
        for (std::int64_t dim : spec.shape)
            if (__builtin_mul_overflow(bytes, dim, &bytes))
                fail(at + ".shape is too large: its byte size overflows 64 bits");
        specs.push_back(std::move(spec));
    }
    return specs;
}
// optimizer.schedule (spec 3.3): a scheduled option is a number in every group, since each
// transaction records it as one float64 per group; since 1.8 it may be one element of an array
// option ("betas[0]").
OptimizerSchedule parseSchedule(const json& schedule, const json& groups, int minor)
{
    if (!schedule.is_object())
        fail("optimizer.schedule must be an object");
    OptimizerSchedule parsed;
    const json& options = member(schedule, "options", "optimizer.schedule");
    if (!options.is_array() || options.empty())
        fail("optimizer.schedule.options must be a non-empty array of option names");
    for (const json& option : options) {
        if (!option.is_string() || option.get<std::string>().empty())
            fail("optimizer.schedule.options holds " + option.dump() + ", not an option name");
        const std::string name = option.get<std::string>();
        if (parsed.schedules(name))
            fail("optimizer.schedule.options names \"" + name + "\" twice");
        const std::optional<ScheduledOptionName> entry = parseScheduledOptionName(name);
        if (!entry || (entry->element && minor < tape::kGradScalerMinor))
            fail("optimizer.schedule.options holds \"" + name + "\", which is not an option name" +
                 (minor < tape::kGradScalerMinor ? std::string() : " or name[i], an element of an array option"));
        for (std::size_t g = 0; g < groups.size(); ++g) {
            const json* value = scheduledValue(groups[g]["options"], name);
            if (!value || !value->is_number())
                fail("optimizer.schedule.options names \"" + name + "\", but optimizer.groups[" + std::to_string(g) +
                     "] has no numeric " + (entry->element ? "element" : "option") + " of that name");
        }
        parsed.options.push_back(name);
    }
    const json& scheduler = member(schedule, "scheduler", "optimizer.schedule");
    if (scheduler.is_null())
        return parsed;
    if (!scheduler.is_object() || !scheduler.contains("kind") || !scheduler["kind"].is_string())
        fail("optimizer.schedule.scheduler must be null or an object with a string kind");
    parsed.schedulerJson = scheduler.dump();
    const json& epoch = member(schedule, "epoch", "optimizer.schedule");
    if (!epoch.is_number_unsigned() || epoch.get<std::uint64_t>() > tape::kMaxScheduleEpochAdvance)
        fail("optimizer.schedule.epoch is " + epoch.dump() + "; it must be an integer from 0 to " + std::to_string(tape::kMaxScheduleEpochAdvance));
    parsed.epoch = epoch.get<std::uint64_t>();
    return parsed;
}

}  // namespace

std::int64_t TensorSpec::elementCount() const
{
    std::int64_t count = 1;
    for (std::int64_t dim : shape)
        count *= dim;
    return count;
}

std::uint64_t TensorSpec::byteSize() const { return static_cast<std::uint64_t>(elementCount()) * dtypeSize(dtype); }

bool OptimizerSchedule::schedules(const std::string& option) const
{
    return std::find(options.begin(), options.end(), option) != options.end();
}

int RootRecord::parameterIndex(const std::string& name) const
{
    for (std::size_t i = 0; i < parameters.size(); ++i)
        if (parameters[i].name == name)
            return static_cast<int>(i);
    return -1;
}

std::string RootRecord::toJson() const
{
    json groups = json::array();
    for (const OptimizerGroup& group : optimizerGroups)
        groups.push_back({{"parameters", group.parameters}, {"options", parseUntrustedJson(group.optionsJson, "optimizer group options")}});
    json producer = {{"name", producerName}, {"version", producerVersion}, {"torch_version", torchVersion}, {"device", device}};
    if (intraOpThreads > 0)
        producer["intra_op_threads"] = intraOpThreads;
    json root = {
        {"prover", prover},
        {"format", {{"major", formatMajor}, {"minor", formatMinor}}},
        {"producer", producer},
        {"model", {{"parameters", specsToJson(parameters)}, {"buffers", specsToJson(buffers)}}},
        {"optimizer", {{"contract", optimizerContract}, {"groups", groups}}},
        {"program", {{"kind", programKind}, {"sha256", toHex(programSha256)}, {"embedded", programEmbedded}, {"entry", programEntry}}},
        {"replay_snapshot_interval", snapshotInterval},
        {"sampling", {{"state_check_probability", stateCheckProbability}, {"update_check_probability", updateCheckProbability}, {"seed", samplingSeed}}},
        {"max_in_flight", maxInFlight},
        {"overlap", overlap},
        {"metadata", parseUntrustedJson(metadataJson, "run metadata")},
    };
    if (!samplingGenerator.empty())
        root["sampling"]["generator"] = samplingGenerator;
    if (optimizerSchedule) {
        json schedule = {{"options", optimizerSchedule->options}, {"scheduler", nullptr}};
        if (optimizerSchedule->checked()) {
            schedule["scheduler"] = parseUntrustedJson(optimizerSchedule->schedulerJson, "optimizer schedule");
            schedule["epoch"] = optimizerSchedule->epoch;
        }
        root["optimizer"]["schedule"] = std::move(schedule);
    }
    if (numerics)
        root["numerics"] = json::parse(numerics->toJson());
    if (determinism)
        root["determinism"] = json::parse(determinism->toJson());
    if (gradScaler)
        root["grad_scaler"] = json::parse(gradScalerDeclarationJson(*gradScaler));
    if (resumes)
        root["resumes"] = {{"chain_head", toHex(resumes->chainHead)},
                           {"size", resumes->size},
                           {"transactions", resumes->transactionsBefore},
                           {"state_digest", toHex(resumes->stateDigest)}};
    if (dataset)
        root["dataset"] = {{"algorithm", std::string(merkleAlgorithmName(dataset->algorithm))},
                           {"root", toHex(dataset->root)},
                           {"leaf_count", dataset->leafCount},
                           {"sample_digest", "zkdv-sample-v1"}};
    return root.dump();
}

RootRecord RootRecord::parse(ByteSpan payload)
{
    const json root = parseUntrustedJson(payload.asString(), "root record");
    if (!root.is_object())
        fail("expected a JSON object");

    RootRecord record;
    record.prover = stringMember(root, "prover", "root");
    if (record.prover != "whitebox-torch")
        fail("prover: expected \"whitebox-torch\", found \"" + record.prover + "\"");
    const json& format = member(root, "format", "root");
    record.formatMajor = static_cast<int>(integerMember(format, "major", "format", 0));
    record.formatMinor = static_cast<int>(integerMember(format, "minor", "format", 0));

    const json& producer = member(root, "producer", "root");
    record.producerName = stringMember(producer, "name", "producer");
    record.producerVersion = stringMember(producer, "version", "producer");
    record.torchVersion = stringMember(producer, "torch_version", "producer");
    record.device = stringMember(producer, "device", "producer");
    if (producer.contains("intra_op_threads"))
        record.intraOpThreads = static_cast<int>(integerMember(producer, "intra_op_threads", "producer", 1));

    const json& model = member(root, "model", "root");
    record.parameters = specsFromJson(member(model, "parameters", "model"), "model.parameters");
    record.buffers = specsFromJson(member(model, "buffers", "model"), "model.buffers");
    // A parameter has a gradient and an update, which torch allows only for floating point.
    for (std::size_t i = 0; i < record.parameters.size(); ++i)
        if (!isFloatingPoint(record.parameters[i].dtype))
            fail("model.parameters[" + std::to_string(i) + "] (" + record.parameters[i].name + ") has dtype " +
                 std::string(dtypeName(record.parameters[i].dtype)) + "; parameters are floating point (F64, F32, F16, BF16)");
    std::set<std::string> names;
    for (const auto* list : {&record.parameters, &record.buffers})
        for (const TensorSpec& spec : *list)
            if (!names.insert(spec.name).second)
                fail("model layout names \"" + spec.name + "\" twice");

    const json& optimizer = member(root, "optimizer", "root");
    record.optimizerContract = stringMember(optimizer, "contract", "optimizer");
    const json& groups = member(optimizer, "groups", "optimizer");
    if (!groups.is_array() || groups.empty())
        fail("optimizer.groups must be a non-empty array");
    std::set<std::string> covered;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        std::string at = "optimizer.groups[" + std::to_string(g) + "]";
        const json& group = groups[g];
        const json& params = member(group, "parameters", at.c_str());
        const json& options = member(group, "options", at.c_str());
        if (!params.is_array() || !options.is_object())
            fail(at + " needs a parameters array and an options object");
        OptimizerGroup parsed;
        for (const json& name : params) {
            if (!name.is_string())
                fail(at + ".parameters holds a non-string");
            std::string text = name.get<std::string>();
            if (record.parameterIndex(text) < 0)
                fail(at + " names \"" + text + "\", which is not a layout parameter");
            if (!covered.insert(text).second)
                fail("parameter \"" + text + "\" belongs to two optimizer groups");
            parsed.parameters.push_back(text);
        }
        parsed.optionsJson = options.dump();
        record.optimizerGroups.push_back(std::move(parsed));
    }
    if (covered.size() != record.parameters.size())
        fail("optimizer groups cover " + std::to_string(covered.size()) + " of the " + std::to_string(record.parameters.size()) +
             " layout parameters; they must cover all of them");
    // Before 1.6 every option is static, whatever the root holds (an unknown member then).
    if (auto schedule = optimizer.find("schedule"); schedule != optimizer.end() && record.formatMinor >= tape::kScheduleMinor)
        record.optimizerSchedule = parseSchedule(*schedule, groups, record.formatMinor);

    const json& program = member(root, "program", "root");
    record.programKind = stringMember(program, "kind", "program");
    std::string digest = stringMember(program, "sha256", "program");
    auto parsedDigest = digestFromHex(digest);
    if (!parsedDigest)
        fail("program.sha256 must be 64 hex digits, found \"" + digest + "\"");
    record.programSha256 = *parsedDigest;
    const json& embedded = member(program, "embedded", "program");
    if (!embedded.is_boolean())
        fail("program.embedded must be true or false");
    record.programEmbedded = embedded.get<bool>();
    record.programEntry = stringMember(program, "entry", "program");

    record.snapshotInterval = static_cast<int>(integerMember(root, "replay_snapshot_interval", "root", 1));
    const json& sampling = member(root, "sampling", "root");
    record.stateCheckProbability = probabilityMember(sampling, "state_check_probability");
    record.updateCheckProbability = probabilityMember(sampling, "update_check_probability");
    const json& seed = member(sampling, "seed", "sampling");
    if (!seed.is_number_integer())
        fail("sampling.seed must be an integer");
    // An unsigned 64-bit integer (section 3): a negative one would be reinterpreted, and two
    // implementations could draw differently from it.
    if (!seed.is_number_unsigned())
        fail("sampling.seed is " + seed.dump() + "; it must be an unsigned 64-bit integer");
    record.samplingSeed = seed.get<std::uint64_t>();
    if (auto generator = sampling.find("generator"); generator != sampling.end()) {
        if (!generator->is_string() || *generator != "splitmix64")
            fail("sampling.generator: expected \"splitmix64\", found " + generator->dump());
    } else if (record.formatMinor >= 1) {
        fail("missing member sampling.generator");
    } else {
        // A 1.0 root names no generator, and none is made up for it (spec 5.2).
        record.samplingGenerator.clear();
    }
    record.maxInFlight = static_cast<int>(integerMember(root, "max_in_flight", "root", 1));
    record.overlap = stringMember(root, "overlap", "root");
    if (auto numerics = root.find("numerics"); numerics != root.end())
        record.numerics = NumericEnvironment::parse(numerics->dump(), "root record: numerics");
    // Before 1.13 an unknown member, which readers ignore.
    if (auto determinism = root.find("determinism"); determinism != root.end() && record.formatMinor >= tape::kDeterminismMinor)
        record.determinism = DeterminismProfile::parse(determinism->dump(), "root record: determinism");
    // Before 1.8 an unknown member, which readers ignore.
    if (auto scaler = root.find("grad_scaler"); scaler != root.end() && record.formatMinor >= tape::kGradScalerMinor)
        record.gradScaler = parseGradScalerDeclaration(scaler->dump());
    // Before 1.10 an unknown member, which readers ignore.
    if (auto resumes = root.find("resumes"); resumes != root.end() && record.formatMinor >= tape::kResumeMinor)
        record.resumes = parseResumedTape(*resumes);
    // Before 1.12 an unknown member, which readers ignore.
    if (auto dataset = root.find("dataset"); dataset != root.end() && record.formatMinor >= tape::kDatasetMinor)
        record.dataset = parseDatasetDeclaration(*dataset, record.formatMinor);
    auto metadata = root.find("metadata");
    if (metadata != root.end()) {
        if (!metadata->is_object())
            fail("metadata must be an object");
        record.metadataJson = metadata->dump();
    }
    return record;
}

}  // namespace zkdv
