// Row-operator keys (issue 33): the canonical lines print and parse back, hashes are pinned, every
// malformed-line class is reported with its column, and parse_key keeps to GEMM lines while
// parse_op_key reads both.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <variant>

#include "common/error.hpp"
#include "key/row_key.hpp"

namespace kd {
namespace {

const DevicePart kH100{"sm_90", "NVIDIA H100 80GB HBM3", 132};
constexpr std::string_view kH100Part = " arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";

constexpr std::string_view kRmsnormLine = "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1";
constexpr std::string_view kLayernormLine = "layernorm dtype=f32 rows=16 cols=4194304 weight=1 bias=1";
constexpr std::string_view kSoftmaxLine = "softmax dtype=f32 rows=4096 cols=65536";

// The key a line parses to, or a test failure naming the line and the parser's message.
OpKey parsed(std::string_view line) {
  auto result = parse_op_key(line);
  if (const auto* e = std::get_if<KeyError>(&result)) {
    ADD_FAILURE() << "rejected: " << line << "\n  " << e->message;
    return RowKey{};
  }
  return std::get<OpKey>(std::move(result));
}

RowKey parsed_row(std::string_view line) {
  const OpKey key = parsed(line);
  if (!std::holds_alternative<RowKey>(key)) {
    ADD_FAILURE() << "not a row-operator key: " << line;
    return RowKey{};
  }
  return std::get<RowKey>(key);
}

std::string with_part(std::string_view line) {
  std::string out(line);
  out += kH100Part;
  return out;
}

TEST(RowKeyNames, EveryOpHasItsSpellingAndInputs) {
  EXPECT_EQ(to_string(RowOp::rmsnorm), "rmsnorm");
  EXPECT_EQ(to_string(RowOp::layernorm), "layernorm");
  EXPECT_EQ(to_string(RowOp::softmax), "softmax");
  EXPECT_TRUE(takes_weight(RowOp::rmsnorm));
  EXPECT_FALSE(takes_bias(RowOp::rmsnorm));
  EXPECT_TRUE(takes_weight(RowOp::layernorm));
  EXPECT_TRUE(takes_bias(RowOp::layernorm));
  EXPECT_FALSE(takes_weight(RowOp::softmax));
  EXPECT_FALSE(takes_bias(RowOp::softmax));
}

TEST(RowKeyRoundTrip, CanonicalLinesParseToTheirFieldsAndPrintBack) {
  const RowKey rms = parsed_row(kRmsnormLine);
  EXPECT_EQ(rms.op, RowOp::rmsnorm);
  EXPECT_EQ(rms.dtype, DType::bf16);
  EXPECT_EQ(rms.rows, 16);
  EXPECT_EQ(rms.cols, 4096);
  EXPECT_TRUE(rms.weight);
  EXPECT_FALSE(rms.bias);
  EXPECT_FALSE(rms.device.has_value());

  const RowKey ln = parsed_row(kLayernormLine);
  EXPECT_EQ(ln.op, RowOp::layernorm);
  EXPECT_EQ(ln.dtype, DType::f32);
  EXPECT_EQ(ln.cols, 4194304);
  EXPECT_TRUE(ln.weight);
  EXPECT_TRUE(ln.bias);

  const RowKey sm = parsed_row(kSoftmaxLine);
  EXPECT_EQ(sm.op, RowOp::softmax);
  EXPECT_EQ(sm.rows, 4096);
  EXPECT_EQ(sm.cols, 65536);
  EXPECT_FALSE(sm.weight);
  EXPECT_FALSE(sm.bias);

  for (const std::string_view line : {kRmsnormLine, kLayernormLine, kSoftmaxLine}) {
    const RowKey k = parsed_row(line);
    EXPECT_EQ(k.shape_line(), line);
    EXPECT_EQ(parsed_row(k.shape_line()), k);

    const std::string full = with_part(line);
    const RowKey d = parsed_row(full);
    ASSERT_TRUE(d.device.has_value()) << full;
    EXPECT_EQ(*d.device, kH100);
    EXPECT_EQ(d.full_line(), full);
    EXPECT_EQ(d.shape_line(), line);
    EXPECT_EQ(d, k.with_device(kH100));
    EXPECT_EQ(d.shape(), k.shape());
    EXPECT_EQ(parsed_row(d.full_line()), d);
  }
}

TEST(RowKeyRoundTrip, FlagsAtZeroArePrintedAndNotCarriedFlagsAreNot) {
  EXPECT_EQ(parsed_row("rmsnorm dtype=f16 rows=1 cols=1 weight=0").shape_line(),
            "rmsnorm dtype=f16 rows=1 cols=1 weight=0");
  EXPECT_EQ(parsed_row("layernorm dtype=bf16 rows=3 cols=5 weight=0 bias=0").shape_line(),
            "layernorm dtype=bf16 rows=3 cols=5 weight=0 bias=0");
  RowKey k;
  k.op = RowOp::softmax;
  k.rows = 2;
  k.cols = 3;
  EXPECT_EQ(k.shape_line(), "softmax dtype=f32 rows=2 cols=3");
}

TEST(RowKeyRoundTrip, BlankRunsAreAcceptedAndPrintedSingle) {
  const RowKey k = parsed_row(" \tlayernorm  dtype=f32\trows=16 cols=4194304 weight=1   bias=1 \r\n");
  EXPECT_EQ(k.shape_line(), kLayernormLine);
}

// Random valid keys of every op, dtype, flag and device part print to lines that parse back.
TEST(RowKeyRoundTrip, RandomKeysPrintParseAndReprint) {
  std::mt19937_64 rng(33);
  auto pick = [&rng](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  static constexpr std::array<DType, 3> kTypes{DType::f16, DType::bf16, DType::f32};
  static constexpr std::array<RowOp, 3> kOps{RowOp::rmsnorm, RowOp::layernorm, RowOp::softmax};
  for (int i = 0; i < 3000; ++i) {
    RowKey k;
    k.op = kOps[static_cast<std::size_t>(pick(0, 2))];
    k.dtype = kTypes[static_cast<std::size_t>(pick(0, 2))];
    k.rows = pick(0, 1) == 0 ? pick(1, 64) : pick(1, std::int64_t{1} << 20);
    k.cols = pick(1, kMaxRowTensorBytes / static_cast<std::int64_t>(dtype_bytes(k.dtype)) / k.rows);
    k.weight = takes_weight(k.op) && pick(0, 1) == 1;
    k.bias = takes_bias(k.op) && pick(0, 1) == 1;
    if (pick(0, 1) == 1) k.device = DevicePart{"sm_" + std::to_string(pick(70, 120)), "GPU " + std::to_string(i),
                                               static_cast<int>(pick(1, 200))};
    const std::string line = k.device ? k.full_line() : k.shape_line();
    const RowKey back = parsed_row(line);
    ASSERT_EQ(back, k) << line;
    ASSERT_EQ(back.hash(), k.hash()) << line;
  }
}

TEST(RowKeyHash, IsPinnedAndDependsOnTheDevicePart) {
  const RowKey k = parsed_row(kRmsnormLine);
  // Pinned: a change here orphans every cache on disk that is indexed by hash.
  EXPECT_EQ(k.hash(), 0x8f2edbbeebd0a59eull) << std::hex << k.hash();
  EXPECT_EQ(k.with_device(kH100).hash(), 0xb4f266dfe31f884full) << std::hex << k.with_device(kH100).hash();
  EXPECT_EQ(parsed_row(with_part(kRmsnormLine)).hash(), k.with_device(kH100).hash());
  EXPECT_NE(parsed_row("rmsnorm dtype=bf16 rows=16 cols=4096 weight=0").hash(), k.hash());
  EXPECT_NE(parsed_row("rmsnorm dtype=f16 rows=16 cols=4096 weight=1").hash(), k.hash());
  EXPECT_NE(parsed_row("rmsnorm dtype=bf16 rows=17 cols=4096 weight=1").hash(), k.hash());
}

TEST(RowKeyFullLine, ThrowsWithoutOrWithAnUnprintableDevicePart) {
  const RowKey k = parsed_row(kSoftmaxLine);
  EXPECT_THROW((void)k.full_line(), Error);
  try {
    (void)k.full_line();
  } catch (const Error& e) {
    EXPECT_EQ(e.domain(), ErrorDomain::usage);
    EXPECT_STREQ(e.what(), "full_line() of a key without a device part");
  }
  const RowKey quoted = k.with_device(DevicePart{"sm_90", "NVIDIA \"H100\"", 132});
  EXPECT_THROW((void)quoted.full_line(), Error);
  EXPECT_THROW((void)quoted.hash(), Error);
  EXPECT_THROW((void)k.with_device(DevicePart{"90", "NVIDIA H100", 132}).full_line(), Error);
}

TEST(RowKeyRoofline, BytesAndFlopsOfTheDesignLines) {
  // x and y: rows*cols each; weight and bias: cols each; times the dtype's bytes.
  EXPECT_EQ(min_bytes(parsed_row(kRmsnormLine)), (2 * 16 * 4096 + 4096) * 2);
  EXPECT_EQ(min_bytes(parsed_row(kLayernormLine)), (std::int64_t{2} * 16 * 4194304 + 2 * 4194304) * 4);
  EXPECT_EQ(min_bytes(parsed_row(kSoftmaxLine)), std::int64_t{2} * 4096 * 65536 * 4);
  EXPECT_EQ(min_bytes(parsed_row("rmsnorm dtype=bf16 rows=16 cols=4096 weight=0")), 2 * 16 * 4096 * 2);
  EXPECT_DOUBLE_EQ(flops(parsed_row(kRmsnormLine)), 16.0 * 4096 * 3);
  EXPECT_DOUBLE_EQ(flops(parsed_row(kLayernormLine)), 16.0 * 4194304 * 5);
  EXPECT_DOUBLE_EQ(flops(parsed_row(kSoftmaxLine)), 4096.0 * 65536 * 4);

  RowShape huge;
  huge.op = RowOp::layernorm;
  huge.rows = std::numeric_limits<std::int64_t>::max();
  huge.cols = std::numeric_limits<std::int64_t>::max();
  huge.weight = huge.bias = true;
  EXPECT_EQ(min_bytes(huge), std::numeric_limits<std::int64_t>::max());
  huge.rows = 1;
  huge.cols = std::numeric_limits<std::int64_t>::max() / 4;
  EXPECT_EQ(min_bytes(huge), std::numeric_limits<std::int64_t>::max());
}

// The largest tensor a key may describe is accepted; one element more is not.
TEST(RowKeyLimits, OneTebibyteTensorIsTheLargest) {
  EXPECT_EQ(parsed_row("softmax dtype=f32 rows=262144 cols=1048576").cols, 1048576);
  EXPECT_EQ(parsed_row("rmsnorm dtype=bf16 rows=1 cols=549755813888 weight=1").cols,
            std::int64_t{1} << 39);
  const auto over = parse_op_key("rmsnorm dtype=bf16 rows=1 cols=549755813889 weight=1");
  ASSERT_TRUE(std::holds_alternative<KeyError>(over));
  EXPECT_EQ(std::get<KeyError>(over).message,
            "column 27: token 'cols=549755813889': rows*cols of bf16 is more than 2^40 bytes (one "
            "tensor is at most 1 TiB)");
}

struct MalformedCase {
  std::string_view name;
  std::string_view line;
  std::size_t column;
  std::string_view message;
};

// Columns were computed independently of the parser (by locating the token in the line).
constexpr MalformedCase kMalformed[] = {
    {"RmsnormMissingWeight", "rmsnorm dtype=bf16 rows=16 cols=4096",
     37, "column 37: expected token 'weight=' but the line ends"},
    {"LayernormMissingBias", "layernorm dtype=f32 rows=16 cols=64 weight=1",
     45, "column 45: expected token 'bias=' but the line ends"},
    {"OpOnly", "softmax",
     8, "column 8: expected token 'dtype=' but the line ends"},
    {"BiasOnRmsnorm", "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1 bias=1",
     47, "column 47: token 'bias=1': rmsnorm takes no bias (only weight=)"},
    {"BiasInsteadOfWeightOnRmsnorm", "rmsnorm dtype=bf16 rows=16 cols=4096 bias=0",
     38, "column 38: token 'bias=0': rmsnorm takes no bias (only weight=)"},
    {"WeightOnSoftmax", "softmax dtype=f32 rows=4096 cols=65536 weight=1",
     40, "column 40: token 'weight=1': softmax takes no weight or bias"},
    {"BiasOnSoftmax", "softmax dtype=f32 rows=4096 cols=65536 bias=0",
     40, "column 40: token 'bias=0': softmax takes no weight or bias"},
    {"WeightAfterDeviceOnSoftmax",
     "softmax dtype=f32 rows=4 cols=8 arch=sm_90 gpu=\"NVIDIA H100\" sms=132 weight=1",
     70, "column 70: unexpected trailing text 'weight=1'"},
    {"RowsZero", "softmax dtype=f32 rows=0 cols=65536",
     19, "column 19: token 'rows=0': must be >= 1"},
    {"ColsZero", "rmsnorm dtype=f16 rows=1 cols=0 weight=1",
     26, "column 26: token 'cols=0': must be >= 1"},
    {"NegativeRows", "softmax dtype=f32 rows=-4 cols=8",
     19, "column 19: token 'rows=-4': negative values are not allowed"},
    {"LeadingZero", "layernorm dtype=f32 rows=016 cols=64 weight=1 bias=1",
     21, "column 21: token 'rows=016': leading zeros are not allowed"},
    {"Over1TiB", "softmax dtype=f32 rows=262144 cols=1048577",
     31, "column 31: token 'cols=1048577': rows*cols of f32 is more than 2^40 bytes (one tensor is at most 1 TiB)"},
    {"Over1TiBHalfPrecision", "rmsnorm dtype=bf16 rows=1048576 cols=1048577 weight=1",
     33, "column 33: token 'cols=1048577': rows*cols of bf16 is more than 2^40 bytes (one tensor is at most 1 TiB)"},
    {"ProductOverflows", "softmax dtype=f16 rows=9223372036854775807 cols=2",
     44, "column 44: token 'cols=2': rows*cols of f16 is more than 2^40 bytes (one tensor is at most 1 TiB)"},
    {"Duplicate", "rmsnorm dtype=bf16 rows=16 rows=16 cols=4096 weight=1",
     28, "column 28: token 'rows=16': duplicate token 'rows='"},
    {"DuplicateTrailing", "softmax dtype=f32 rows=8 cols=8 cols=8",
     33, "column 33: token 'cols=8': duplicate token 'cols='"},
    {"OutOfOrder", "rmsnorm dtype=bf16 cols=4096 rows=16 weight=1",
     20, "column 20: expected 'rows=' got 'cols=4096'"},
    {"BiasBeforeWeight", "layernorm dtype=f32 rows=16 cols=64 bias=1 weight=1",
     37, "column 37: expected 'weight=' got 'bias=1'"},
    {"GpuWithoutArch", "softmax dtype=f32 rows=4 cols=8 gpu=\"NVIDIA H100\" sms=132",
     33, "column 33: token 'gpu=\"NVIDIA H100\"': out of order: 'gpu=' goes right after 'arch='"},
    {"TrailingText", "softmax dtype=f32 rows=4096 cols=65536 foo",
     40, "column 40: unexpected trailing text 'foo'"},
    {"BadDType", "softmax dtype=f64 rows=4 cols=8",
     9, "column 9: token 'dtype=f64': expected f16, bf16 or f32"},
    {"BadFlag", "layernorm dtype=f32 rows=16 cols=64 weight=1 bias=2",
     46, "column 46: token 'bias=2': expected 0 or 1"},
    {"BadArch", "rmsnorm dtype=bf16 rows=16 cols=4096 weight=1 arch=90 gpu=\"NVIDIA H100\" sms=132",
     47, "column 47: token 'arch=90': expected sm_<digits>, e.g. sm_90"},
    {"UnknownOp", "conv dtype=f32",
     1, "column 1: token 'conv': unknown op (expected gemm, linear, rmsnorm, layernorm or softmax)"},
    {"EmptyLine", "", 1, "column 1: empty line"},
    {"CommentLine", "  # row shapes", 3, "column 3: comment line"},
};

class MalformedRowLine : public testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedRowLine, ReportsTheTokenAndItsColumn) {
  const MalformedCase& c = GetParam();
  const auto result = parse_op_key(c.line);
  ASSERT_TRUE(std::holds_alternative<KeyError>(result)) << "accepted: " << c.line;
  const KeyError& e = std::get<KeyError>(result);
  EXPECT_EQ(e.column, c.column) << e.message;
  EXPECT_EQ(e.message, c.message);
}

INSTANTIATE_TEST_SUITE_P(RowKeyErrors, MalformedRowLine, testing::ValuesIn(kMalformed),
                         [](const testing::TestParamInfo<MalformedCase>& param_info) {
                           return std::string(param_info.param.name);
                         });

TEST(RowKeyErrors, LinesOverTheKeyLimitAreRejectedByLength) {
  std::string line(kSoftmaxLine);
  line.append(kMaxKeyLineBytes + 1 - line.size(), ' ');
  const auto result = parse_op_key(line);
  ASSERT_TRUE(std::holds_alternative<KeyError>(result));
  EXPECT_EQ(std::get<KeyError>(result).message,
            "column 503: the line is 503 bytes, longer than the 502-byte limit of a key line");
}

// Damaged lines (bytes deleted, replaced or inserted) never crash the parser; an error points
// inside the line; a damaged line that still parses prints a line that parses to the same key.
TEST(RowKeyErrors, DamagedLinesAreRejectedOrStayConsistent) {
  const std::string lines[] = {with_part(kRmsnormLine), with_part(kLayernormLine), std::string(kSoftmaxLine)};
  constexpr std::string_view kAlphabet = "= \"\t#-0123456789abdfilorstw_";
  std::mt19937_64 rng(33);
  auto pick = [&rng](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  int rejected = 0, accepted = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string line = lines[pick(3)];
    for (std::size_t edits = 1 + pick(3); edits > 0; --edits) {
      const std::size_t at = pick(line.size());
      switch (pick(3)) {
        case 0: line.erase(at, 1 + pick(4)); break;
        case 1: line[at] = kAlphabet[pick(kAlphabet.size())]; break;
        default: line.insert(at, 1, kAlphabet[pick(kAlphabet.size())]); break;
      }
      if (line.empty()) line = "x";
    }
    const auto result = parse_op_key(line);
    if (const auto* e = std::get_if<KeyError>(&result)) {
      ++rejected;
      ASSERT_GE(e->column, 1u) << line;
      ASSERT_LE(e->column, line.size() + 1) << line;
      ASSERT_EQ(e->message.rfind("column " + std::to_string(e->column) + ": ", 0), 0u) << e->message;
      continue;
    }
    ++accepted;
    const OpKey& k = std::get<OpKey>(result);
    const bool has_device = std::visit([](const auto& key) { return key.device.has_value(); }, k);
    const std::string printed = has_device ? op_full_line(k) : op_shape_line(k);
    const auto again = parse_op_key(printed);
    ASSERT_TRUE(std::holds_alternative<OpKey>(again)) << line << "\n" << printed;
    ASSERT_EQ(std::get<OpKey>(again), k) << line << "\n" << printed;
  }
  EXPECT_GT(rejected, 2500);
  EXPECT_GT(accepted, 25);  // digit edits and blank insertions keep some lines valid
}

TEST(ParseKey, RefusesRowOperatorLinesByName) {
  for (const std::string_view op : {"rmsnorm", "layernorm", "softmax"}) {
    std::string line = "  ";
    line += op;
    line += " dtype=f32 rows=1 cols=1";
    const auto result = parse_key(line);
    ASSERT_TRUE(std::holds_alternative<KeyError>(result)) << line;
    const KeyError& e = std::get<KeyError>(result);
    EXPECT_EQ(e.column, 3u);
    EXPECT_EQ(e.message,
              "column 3: token '" + std::string(op) + "': a row-operator key where a GEMM key is expected");
  }
  const auto unknown = parse_key("conv dtype=f32");
  ASSERT_TRUE(std::holds_alternative<KeyError>(unknown));
  EXPECT_EQ(std::get<KeyError>(unknown).message, "column 1: token 'conv': unknown op (expected gemm or linear)");
}

TEST(ParseOpKey, ReadsGemmLinesAsParseKeyDoes) {
  const std::string lines[] = {
      "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 "
      "batch=1 epilogue=none beta0=1",
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=777 n=33..64 k=555 lda=800 ldb=64 ldc=777 batch=8 "
      "stride_a=444000 stride_b=0 stride_c=621591 epilogue=bias beta0=0 precision=tf32 arch=sm_90 "
      "gpu=\"NVIDIA H100 80GB HBM3\" sms=132",
      "linear dtype=bf16 tokens=16 in=4096 out=4096 bias=1",
  };
  for (const std::string& line : lines) {
    const auto gemm = parse_key(line);
    ASSERT_TRUE(std::holds_alternative<GemmKey>(gemm)) << std::get<KeyError>(gemm).message;
    const OpKey key = parsed(line);
    ASSERT_TRUE(std::holds_alternative<GemmKey>(key)) << line;
    const GemmKey& k = std::get<GemmKey>(gemm);
    EXPECT_EQ(std::get<GemmKey>(key), k);
    EXPECT_EQ(op_shape_line(key), k.shape_line());
    EXPECT_EQ(op_hash(key), k.hash());
    if (k.device) {
      EXPECT_EQ(op_full_line(key), k.full_line());
    }
  }
  // A malformed GEMM line gets parse_key's error, word for word.
  const std::string bad =
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=064 ldb=16 ldc=64 batch=1 "
      "epilogue=none beta0=1";
  const auto from_op = parse_op_key(bad);
  const auto from_gemm = parse_key(bad);
  ASSERT_TRUE(std::holds_alternative<KeyError>(from_op));
  ASSERT_TRUE(std::holds_alternative<KeyError>(from_gemm));
  EXPECT_EQ(std::get<KeyError>(from_op).message, std::get<KeyError>(from_gemm).message);
  EXPECT_EQ(std::get<KeyError>(from_op).column, 61u);
}

TEST(ParseOpKey, HelpersFollowTheRowKey) {
  const OpKey key = parsed(with_part(kLayernormLine));
  const RowKey& k = std::get<RowKey>(key);
  EXPECT_EQ(op_shape_line(key), kLayernormLine);
  EXPECT_EQ(op_full_line(key), with_part(kLayernormLine));
  EXPECT_EQ(op_hash(key), k.hash());
  EXPECT_THROW((void)op_full_line(OpKey{parsed_row(kLayernormLine)}), Error);
}

}  // namespace
}  // namespace kd
