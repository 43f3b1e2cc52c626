#include "llm/operator_context.hpp"

#include <array>
#include <cstdint>

#include <fmt/format.h>

#include "compile/embedded_headers.hpp"

namespace kd::llm {
namespace {

constexpr std::string_view kGemmSemantics =
    "GEMM with cuBLAS semantics, column-major: for each batch z, C_z = alpha * op(A_z) * op(B_z) + "
    "beta * C_z (+ bias[row] broadcast over columns when epilogue=bias). op(X) is X or its "
    "transpose by ta/tb; element (i,j) of a matrix X sits at X[i + j*ldX]; op(A) is m x k, op(B) "
    "is k x n, C is m x n; beta0=1 means beta is 0 and C must not be read (it may hold NaN). The "
    "result must be as accurate as the key's precision class allows: f32 forbids reduced-precision "
    "products (TF32, bf16) unless error-compensated to fp32 accuracy.";

constexpr std::string_view kRowBaseline =
    "The baseline (the framework's own kernel for this call: PyTorch's where the evaluating host has "
    "it, else the evaluator's f32 kernel of the same design)";

// Each row operator's formula, for row r of the tensor (one row of the table per RowOp).
struct RowOpText {
  RowOp op;
  std::string_view formula;
};
constexpr std::array<RowOpText, 3> kRowOps = {{
    {RowOp::rmsnorm,
     "rmsnorm (RMS normalization) over the last dimension, each row independently:\n"
     "y[r][c] = x[r][c] * rsqrt(mean_c(x[r][c]^2) + eps) * weight[c]\n"
     "where mean_c is the mean over the row's cols elements and eps = args.eps (a call argument, "
     "not part of the key)."},
    {RowOp::layernorm,
     "layernorm (layer normalization, forward) over the last dimension, each row independently:\n"
     "y[r][c] = (x[r][c] - mean) * rsqrt(var + eps) * weight[c] + bias[c]\n"
     "where mean = sum_c x[r][c] / cols and var = sum_c (x[r][c] - mean)^2 / cols, the biased "
     "variance (divide by cols, not cols - 1), and eps = args.eps (a call argument, not part of "
     "the key)."},
    {RowOp::softmax,
     "softmax over the last dimension, each row independently:\n"
     "y[r][c] = exp(x[r][c] - m) / sum_c' exp(x[r][c'] - m), with m = max_c x[r][c]\n"
     "(subtracting the row's max keeps exp from overflowing). args.weight and args.bias are null "
     "and args.eps is unused."},
}};

// How a kernel reads and writes each dtype (one row per DType).
struct RowDtypeText {
  DType dtype;
  std::string_view c_type;   // the element type in device code
  std::string_view header;   // what declares it
  std::string_view load;     // element -> f32
  std::string_view store;    // f32 -> element, rounded to nearest even
};
constexpr std::array<RowDtypeText, 3> kRowDtypes = {{
    {DType::f32, "float", "", "", ""},
    {DType::f16, "__half", "<cuda_fp16.h>", "__half2float", "__float2half_rn"},
    {DType::bf16, "__nv_bfloat16", "<cuda_bf16.h>", "__bfloat162float", "__float2bfloat16_rn"},
}};

const RowOpText& op_text(RowOp op) {
  for (const RowOpText& row : kRowOps)
    if (row.op == op) return row;
  return kRowOps.front();  // unreachable: every RowOp has a row
}

const RowDtypeText& dtype_row(DType dtype) {
  for (const RowDtypeText& row : kRowDtypes)
    if (row.dtype == dtype) return row;
  return kRowDtypes.front();  // unreachable: every DType has a row
}

// `include_name`'s header verbatim, then the grid-dependency header it includes (the
// KD_GRID_DEPENDENCY_WAIT macro).
std::string contract_text(std::string_view include_name) {
  std::string header, wait;
  for (const auto& h : search::embedded_headers()) {
    if (h.include_name == include_name) header = h.contents;
    if (h.include_name == "kdispatch/grid_dependency.cuh") wait = h.contents;
  }
  return header.empty() ? header : header + "\n" + wait;
}

// What this key's weight= and bias= make of the argument struct's pointers.
std::string affine_text(const RowKey& key) {
  const std::string_view dtype = to_string(key.dtype);
  const auto one = [&](std::string_view name, bool present) {
    return present ? fmt::format("This call has {0}=1: args.{0} points at cols elements of {1}, shared by every row.",
                                 name, dtype)
                   : fmt::format("This call has {0}=0: args.{0} is null; leave out the {0} term.", name);
  };
  if (!takes_weight(key.op)) return {};
  std::string out = one("weight", key.weight);
  if (takes_bias(key.op)) {
    out += ' ';
    out += one("bias", key.bias);
  }
  return out;
}

std::string dtype_text(const RowKey& key) {
  const RowDtypeText& d = dtype_row(key.dtype);
  const std::string_view name = to_string(key.dtype);
  const std::string_view tensors = takes_bias(key.op) ? "x, y, weight and bias are"
                                   : takes_weight(key.op) ? "x, y and weight are"
                                                          : "x and y are";
  if (key.dtype == DType::f32) {
    return fmt::format("Data type: {} {} (float, 4 bytes). Do all the arithmetic in f32 (or wider).", tensors,
                       name);
  }
  return fmt::format(
      "Data type: {0} {1} ({2} from {3}, {4} bytes). Convert each loaded element to f32 ({5}), do all the "
      "arithmetic in f32 (sums, statistics, rsqrt/exp, the products), and round once to {1} when "
      "storing y ({6}): what the frameworks' kernels do, and the error allowance is set by such a kernel.",
      tensors, name, d.c_type, d.header, dtype_bytes(key.dtype), d.load, d.store);
}

std::string row_alignment_text(std::int64_t row_bytes) {
  if (row_bytes % 16 == 0) {
    return fmt::format(
        "The tensors (x, y, and weight and bias where given) start on 16-byte boundaries, and so does every "
        "row ({} bytes per row is a "
        "multiple of 16): 16-byte vector loads and stores are aligned everywhere.",
        row_bytes);
  }
  std::int64_t aligned = 16;
  while (row_bytes % aligned != 0) aligned /= 2;
  return fmt::format(
      "The tensors (x, y, and weight and bias where given) start on 16-byte boundaries, but rows do not "
      "({} bytes per row is not a "
      "multiple of 16): row r starts at byte r * {}, so accesses wider than {} bytes must handle each "
      "row's unaligned start and end.",
      row_bytes, row_bytes, aligned);
}

}  // namespace

ProposerContext operator_context(const GemmKey& key) {
  ProposerContext c;
  c.op = PromptOperator::gemm;
  c.semantics = std::string(kGemmSemantics);
  c.key_line = key.device ? key.full_line() : key.shape_line();
  c.contract = contract_text("kdispatch/gemm.cuh");
  return c;
}

ProposerContext operator_context(const RowKey& key) {
  ProposerContext c;
  c.op = PromptOperator::row;
  c.semantics = std::string(op_text(key.op).formula) + "\n";
  if (const std::string affine = affine_text(key); !affine.empty()) c.semantics += affine + "\n";
  c.semantics += dtype_text(key);
  c.key_line = key.device ? key.full_line() : key.shape_line();
  c.contract = contract_text("kdispatch/rowop.cuh");
  c.baseline_name = std::string(kRowBaseline);
  const std::int64_t row_bytes = key.cols * static_cast<std::int64_t>(dtype_bytes(key.dtype));
  const std::int64_t bytes = min_bytes(key.shape());
  c.operator_vars = {
      {"rows", std::to_string(key.rows)},
      {"cols", std::to_string(key.cols)},
      {"dtype", std::string(to_string(key.dtype))},
      {"row_bytes", std::to_string(row_bytes)},
      {"row_alignment", row_alignment_text(row_bytes)},
      {"min_bytes", fmt::format("{} bytes ({:.2f} MiB)", bytes, static_cast<double>(bytes) / (1024.0 * 1024.0))},
  };
  return c;
}

}  // namespace kd::llm
