#include "zkdv/graph/operator_allow_list.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace zkdv {

namespace {

// Why each group is safe: every entry is an ATen operator whose kernels read their tensor
// arguments and write a new tensor or, for the few in-place ones, the arguments kWriting
// names (the reader refuses any such write into a parameter, the batch or a constant).
// None opens files (aten::from_file, aten::save are absent), none reaches outside the process,
// none calls back into Python or a custom library (only the aten namespace), none reads a
// tensor's value to the host (aten::item, aten::_local_scalar_dense are absent: a graph stays
// data-independent), none resizes or re-points storage (aten::set_, aten::resize_ absent) and
// none copies into a parameter behind the optimizer's back (aten::copy_ absent). The random
// ones (dropout, attention) are admitted only where the program fixes them to draw nothing.
constexpr std::array kAllowed = {
    // linear algebra and convolutions
    "aten::linear", "aten::matmul", "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::einsum",
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d", "aten::conv_transpose2d.input",
    "aten::convolution", "aten::bilinear",
    // activations
    "aten::relu", "aten::relu_", "aten::gelu", "aten::silu", "aten::sigmoid", "aten::tanh", "aten::elu", "aten::leaky_relu",
    "aten::hardtanh", "aten::softplus", "aten::mish", "aten::hardswish", "aten::hardsigmoid", "aten::glu", "aten::softmax.int",
    "aten::log_softmax.int", "aten::_softmax", "aten::_log_softmax",
    // normalisation (batch_norm updates the running buffers it is given, in place)
    "aten::batch_norm", "aten::layer_norm", "aten::group_norm", "aten::instance_norm", "aten::rms_norm",
    // pooling
    "aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d", "aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d",
    "aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d", "aten::adaptive_max_pool2d",
    // attention (dropout_p must be fixed at 0)
    "aten::scaled_dot_product_attention",
    // dropout (p fixed at 0 or train fixed false: it returns its input)
    "aten::dropout", "aten::feature_dropout",
    // shapes and views
    "aten::view", "aten::reshape", "aten::flatten.using_ints", "aten::unflatten.int", "aten::permute", "aten::transpose.int",
    "aten::t", "aten::unsqueeze", "aten::squeeze", "aten::squeeze.dim", "aten::squeeze.dims", "aten::contiguous", "aten::expand",
    "aten::expand_as", "aten::view_as", "aten::select.int", "aten::slice.Tensor", "aten::narrow", "aten::split.Tensor",
    "aten::split_with_sizes", "aten::chunk", "aten::unbind.int", "aten::cat", "aten::stack", "aten::repeat", "aten::clone",
    "aten::alias", "aten::movedim.int", "aten::index_select", "aten::gather", "aten::index.Tensor", "aten::masked_fill.Scalar",
    "aten::masked_fill_.Scalar",
    "aten::masked_fill.Tensor", "aten::where.self", "aten::where.ScalarOther", "aten::where.ScalarSelf", "aten::tril", "aten::triu",
    "aten::pad", "aten::constant_pad_nd", "aten::embedding", "aten::one_hot", "aten::detach",
    // dtype conversion; the device a graph names is never its own choice: the interpreter runs
    // every device argument as the device the program runs on (to.device and to.dtype_layout:
    // RMSNorm's float cast and rotary embeddings in transformers' Llama, GPT-2 and BERT)
    "aten::to.dtype", "aten::to.device", "aten::to.dtype_layout", "aten::type_as", "aten::_to_copy",
    // a check that returns nothing and throws when a tensor's dtype, device or layout differ
    // (torch.export writes one before each conversion it keeps)
    "aten::_assert_tensor_metadata",
    // elementwise arithmetic
    "aten::add.Tensor", "aten::add.Scalar", "aten::add_.Tensor", "aten::sub.Tensor", "aten::sub.Scalar", "aten::rsub.Scalar",
    "aten::mul.Tensor", "aten::mul.Scalar", "aten::mul_.Tensor", "aten::div.Tensor", "aten::div.Scalar", "aten::div.Tensor_mode", "aten::neg",
    "aten::abs", "aten::pow.Tensor_Scalar", "aten::pow.Tensor_Tensor", "aten::sqrt", "aten::rsqrt", "aten::exp", "aten::log",
    "aten::log1p", "aten::expm1", "aten::sin", "aten::cos", "aten::reciprocal", "aten::square", "aten::clamp", "aten::clamp_min",
    "aten::clamp_max", "aten::maximum", "aten::minimum", "aten::sign", "aten::floor", "aten::ceil", "aten::round", "aten::erf",
    "aten::lerp.Scalar", "aten::addcmul", "aten::addcdiv",
    // comparisons
    "aten::eq.Tensor", "aten::eq.Scalar", "aten::ne.Tensor", "aten::ne.Scalar", "aten::gt.Tensor", "aten::gt.Scalar",
    "aten::lt.Tensor", "aten::lt.Scalar", "aten::ge.Tensor", "aten::ge.Scalar", "aten::le.Tensor", "aten::le.Scalar",
    "aten::logical_not", "aten::logical_and", "aten::logical_or", "aten::__and__.Tensor",
    // reductions
    "aten::sum", "aten::sum.dim_IntList", "aten::mean", "aten::mean.dim", "aten::amax", "aten::amin", "aten::max.dim",
    "aten::min.dim", "aten::argmax", "aten::argmin", "aten::var.correction", "aten::std.correction", "aten::norm.Scalar",
    "aten::norm.ScalarOpt_dim", "aten::logsumexp", "aten::cumsum", "aten::prod",
    // tensors shaped like an argument, or sized by the program's constants (new_ones by a size
    // list, bounded like every list; arange by its end, bounded at 2^32 elements: position ids
    // and causal masks)
    "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::empty_like", "aten::new_ones", "aten::arange",
    // losses
    "aten::cross_entropy_loss", "aten::nll_loss", "aten::nll_loss_nd", "aten::mse_loss", "aten::l1_loss", "aten::smooth_l1_loss",
    "aten::huber_loss", "aten::binary_cross_entropy", "aten::binary_cross_entropy_with_logits", "aten::kl_div",
    "aten::soft_margin_loss", "aten::cosine_similarity",
};

// Where the allow-list's operators may return an argument itself or a view of it (torch's
// schemas annotate most as `Tensor(a) self -> Tensor(a)`; dropout, feature_dropout and
// type_as return their input unannotated when they have nothing to do, and the in-place forms
// return what they wrote). Every other operator on the list returns a tensor of its own;
// tests/program/test_exported_graph.cpp checks this table against the schemas of the
// libtorch it is built with.
constexpr const char* kMayAliasFirst[] = {
    "aten::relu_", "aten::add_.Tensor", "aten::mul_.Tensor", "aten::masked_fill_.Scalar", "aten::dropout", "aten::feature_dropout", "aten::view", "aten::reshape",
    "aten::flatten.using_ints", "aten::unflatten.int", "aten::permute", "aten::transpose.int", "aten::t", "aten::unsqueeze",
    "aten::squeeze", "aten::squeeze.dim", "aten::squeeze.dims", "aten::contiguous", "aten::expand", "aten::expand_as",
    "aten::view_as", "aten::select.int", "aten::slice.Tensor", "aten::narrow", "aten::split.Tensor", "aten::split_with_sizes",
    "aten::chunk", "aten::unbind.int", "aten::alias", "aten::movedim.int", "aten::detach", "aten::to.dtype", "aten::to.device",
    "aten::to.dtype_layout", "aten::type_as",
};
// Operators anywhere in ATen whose schemas say they return a new tensor while their
// composite implementations may return an argument or a view of it.
constexpr const char* kUnannotatedAliases[] = {
    "dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "type_as", "atleast_1d", "atleast_2d", "atleast_3d",
    "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "_unsafe_view", "meshgrid", "broadcast_tensors", "data",
    "_cast_Byte", "_cast_Char", "_cast_Double", "_cast_Float", "_cast_Int", "_cast_Long", "_cast_Short", "_cast_Half",
};

// einsum of one operand returns a permuted or diagonal view of it.
constexpr const char* kMayAliasAnyArgument[] = {"aten::einsum"};

// What the operators on the list write in place. batch_norm and instance_norm update the
// running statistics they are given although their schemas mark nothing written.
struct WritingOperator {
    const char* name;
    OperatorEffect::Write writes[2];
    std::size_t count;
};
constexpr WritingOperator kWriting[] = {
    {"aten::relu_", {{0, "self"}, {}}, 1},
    {"aten::add_.Tensor", {{0, "self"}, {}}, 1},
    {"aten::mul_.Tensor", {{0, "self"}, {}}, 1},  // transformers.Trainer's loss *= loss_scale
    {"aten::masked_fill_.Scalar", {{0, "self"}, {}}, 1},  // a bool attention mask made additive
    {"aten::batch_norm", {{3, "running_mean"}, {4, "running_var"}}, 2},
    {"aten::instance_norm", {{3, "running_mean"}, {4, "running_var"}}, 2},
};

std::string_view withoutDefaultSuffix(std::string_view qualified)
{
    // ".default" is how FX spells the default overload; the list spells it without.
    if (qualified.size() > 8 && qualified.substr(qualified.size() - 8) == ".default")
        qualified.remove_suffix(8);
    return qualified;
}

template <typename List>
bool listed(const List& list, std::string_view name)
{
    return std::any_of(std::begin(list), std::end(list), [&](const char* entry) { return name == entry; });
}

}  // namespace

bool isAllowedOperator(std::string_view qualified) { return listed(kAllowed, withoutDefaultSuffix(qualified)); }

std::optional<OperatorEffect> allowedOperatorEffect(std::string_view qualified)
{
    const std::string_view name = withoutDefaultSuffix(qualified);
    if (!listed(kAllowed, name))
        return std::nullopt;
    OperatorEffect effect;
    if (listed(kMayAliasFirst, name))
        effect.result = OperatorEffect::Result::MayAliasFirst;
    else if (listed(kMayAliasAnyArgument, name))
        effect.result = OperatorEffect::Result::MayAliasAnyArgument;
    for (const WritingOperator& op : kWriting)
        if (name == op.name)
            effect.writes.assign(op.writes, op.writes + op.count);
    return effect;
}

bool mayReturnAnArgumentUnannotated(std::string_view qualified)
{
    const std::size_t colons = qualified.find("::");
    if (colons == std::string_view::npos)
        return false;
    std::string_view name = qualified.substr(colons + 2);
    name = name.substr(0, name.find('.'));
    return listed(kUnannotatedAliases, name);
}

std::vector<std::string> allowedOperators()
{
    std::vector<std::string> list(kAllowed.begin(), kAllowed.end());
    std::sort(list.begin(), list.end());
    return list;
}

}  // namespace zkdv
