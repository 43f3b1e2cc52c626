// Every malformed-line class parse_key reports, each with the exact column and message. Columns
// are 1-based byte offsets of the offending token in the whole line (leading blanks included); a
// token missing at the end is reported just after the last non-blank character.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <variant>

#include "key/gemm_key.hpp"

namespace kd {
namespace {

struct MalformedCase {
  std::string_view name;
  std::string_view line;
  std::size_t column;
  std::string_view message;
};

// Columns were computed independently of the parser (by locating the token in the line).
constexpr MalformedCase kMalformed[] = {
    {"BadTranspose",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=X tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     36, "column 36: token 'ta=X': expected N or T"},
    {"BadTransposeAfterLeadingBlanks",
     "   gemm a=f32 b=f32 c=f32 compute=f32 ta=X tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     39, "column 39: token 'ta=X': expected N or T"},
    {"UnknownOp",
     "conv a=f32 b=f32",
     1, "column 1: token 'conv': unknown op (expected gemm or linear)"},
    {"EmptyLine",
     "",
     1, "column 1: empty line"},
    {"BlankLine",
     "  \t ",
     1, "column 1: empty line"},
    {"CommentLine",
     "  # llama shapes",
     3, "column 3: comment line"},
    {"MissingTokenAtEnd",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16",
     74, "column 74: expected token 'ldc=' but the line ends"},
    {"MissingTokenAtEndTrailingBlanks",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16   ",
     74, "column 74: expected token 'ldc=' but the line ends"},
    {"OpOnly",
     "gemm",
     5, "column 5: expected token 'a=' but the line ends"},
    {"OutOfOrder",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 ldb=16 lda=64 ldc=64 batch=1 epilogue=none beta0=1",
     61, "column 61: expected 'lda=' got 'ldb=16'"},
    {"BareWordWhereTokenExpected",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m 64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     46, "column 46: expected 'm=' got 'm'"},
    {"UnknownTokenMidLine",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N rows=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     46, "column 46: expected 'm=' got 'rows=64'"},
    {"NonInteger",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=6x4 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     46, "column 46: token 'm=6x4': expected a decimal integer"},
    {"EmptyInteger",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n= k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     51, "column 51: token 'n=': expected a decimal integer"},
    {"PlusSign",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=+32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     51, "column 51: token 'n=+32': expected a decimal integer"},
    {"Negative",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=-32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     51, "column 51: token 'n=-32': negative values are not allowed"},
    {"Zero",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=0 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     56, "column 56: token 'k=0': must be >= 1"},
    {"LeadingZero",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=064 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     61, "column 61: token 'lda=064': leading zeros are not allowed"},
    {"Overflow",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=9223372036854775808 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     46, "column 46: token 'm=9223372036854775808': value too large (at most 9223372036854775807)"},
    {"OverflowBeyond64Bits",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=123456789012345678901234567890 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     46, "column 46: token 'm=123456789012345678901234567890': value too large (at most 9223372036854775807)"},
    {"LdaBelowRowsForN",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=63 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     61, "column 61: token 'lda=63': lda must be >= 64 (rows of stored A: ta=N -> m)"},
    {"LdaBelowRowsForT",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=64 n=32 k=16 lda=15 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     61, "column 61: token 'lda=15': lda must be >= 16 (rows of stored A: ta=T -> k)"},
    {"LdbBelowRowsForN",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=15 ldc=64 batch=1 epilogue=none beta0=1",
     68, "column 68: token 'ldb=15': ldb must be >= 16 (rows of stored B: tb=N -> k)"},
    {"LdbBelowRowsForT",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=64 n=32 k=16 lda=64 ldb=31 ldc=64 batch=1 epilogue=none beta0=1",
     68, "column 68: token 'ldb=31': ldb must be >= 32 (rows of stored B: tb=T -> n)"},
    {"LdcBelowM",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=63 batch=1 epilogue=none beta0=1",
     75, "column 75: token 'ldc=63': ldc must be >= 64 (rows of C: m)"},
    {"TrailingGarbage",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 foo",
     112, "column 112: unexpected trailing text 'foo'"},
    {"TrailingUnknownToken",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 x=1",
     112, "column 112: unexpected trailing text 'x=1'"},
    {"DuplicateToken",
     "gemm a=f32 a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     12, "column 12: token 'a=f32': duplicate token 'a='"},
    {"DuplicateTrailingToken",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 beta0=1",
     112, "column 112: token 'beta0=1': duplicate token 'beta0='"},
    {"StridesWithBatchOne",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 stride_a=0 stride_b=0 stride_c=0 epilogue=none beta0=1",
     90, "column 90: token 'stride_a=0': strides are only allowed when batch > 1"},
    {"BatchedWithoutStrides",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=2 epilogue=none beta0=1",
     90, "column 90: expected 'stride_a=' got 'epilogue=none'"},
    {"BatchZero",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=0 epilogue=none beta0=1",
     82, "column 82: token 'batch=0': must be >= 1"},
    {"NegativeStride",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=2 stride_a=-1 stride_b=0 stride_c=0 epilogue=none beta0=1",
     90, "column 90: token 'stride_a=-1': negative values are not allowed"},
    {"BadEpilogue",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=relu beta0=1",
     90, "column 90: token 'epilogue=relu': expected none or bias"},
    {"BadBetaFlag",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=2",
     104, "column 104: token 'beta0=2': expected 0 or 1"},
    {"BadDType",
     "gemm a=f64 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     6, "column 6: token 'a=f64': expected f16, bf16 or f32"},
    {"QuotedEnumValue",
     "gemm a=\"f32\" b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     6, "column 6: token 'a=\"f32\"': expected f16, bf16 or f32"},
    {"MixedInputs",
     "gemm a=f32 b=bf16 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     12, "column 12: token 'b=bf16': b must equal a (a=f32)"},
    {"NarrowOutputOfF32",
     "gemm a=f32 b=f32 c=f16 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     18, "column 18: token 'c=f16': c must be the input type, or f32 with f16/bf16 inputs"},
    {"ComputeF16WithBf16",
     "gemm a=bf16 b=bf16 c=bf16 compute=f16 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     27, "column 27: token 'compute=f16': compute=f16 needs a=b=c=f16"},
    {"ComputeF16WithF32Output",
     "gemm a=f16 b=f16 c=f32 compute=f16 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     24, "column 24: token 'compute=f16': compute=f16 needs a=b=c=f16"},
    {"BadComputeName",
     "gemm a=f32 b=f32 c=f32 compute=f64 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1",
     24, "column 24: token 'compute=f64': expected f16 or f32"},
    {"PrecisionTf32WithComputeF16",
     "gemm a=f16 b=f16 c=f16 compute=f16 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 precision=tf32",
     112, "column 112: token 'precision=tf32': not a precision class of compute=f16 (f32 allows f32 or tf32, f16 allows f16)"},
    {"PrecisionF16WithComputeF32",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 precision=f16",
     112, "column 112: token 'precision=f16': not a precision class of compute=f32 (f32 allows f32 or tf32, f16 allows f16)"},
    {"PrecisionF32WithComputeF16",
     "gemm a=f16 b=f16 c=f16 compute=f16 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 precision=f32",
     112, "column 112: token 'precision=f32': not a precision class of compute=f16 (f32 allows f32 or tf32, f16 allows f16)"},
    {"UnknownPrecision",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 precision=fp8",
     112, "column 112: token 'precision=fp8': expected f32, tf32 or f16"},
    {"PrecisionAfterDevice",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132 precision=tf32",
     159, "column 159: token 'precision=tf32': out of order: 'precision=' goes right after 'beta0='"},
    {"UnterminatedQuote",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3 sms=132",
     123, "column 123: token 'gpu=\"NVIDIA H100 80GB HBM3 sms=132': unterminated quote"},
    {"TextAfterClosingQuote",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100\"x sms=132",
     123, "column 123: token 'gpu=\"NVIDIA H100\"x': text after the closing quote"},
    {"UnquotedGpu",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=H100 sms=132",
     123, "column 123: token 'gpu=H100': expected a double-quoted GPU name"},
    {"EmptyGpu",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"\" sms=132",
     123, "column 123: token 'gpu=\"\"': empty GPU name"},
    {"BadArch",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=90 gpu=\"NVIDIA H100\" sms=132",
     112, "column 112: token 'arch=90': expected sm_<digits>, e.g. sm_90"},
    {"BadArchSuffix",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90-x gpu=\"NVIDIA H100\" sms=132",
     112, "column 112: token 'arch=sm_90-x': expected sm_<digits> with an optional lowercase suffix, e.g. sm_90a"},
    {"DeviceWithoutSms",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\"",
     150, "column 150: expected token 'sms=' but the line ends"},
    {"GpuWithoutArch",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 gpu=\"NVIDIA H100\" sms=132",
     112, "column 112: token 'gpu=\"NVIDIA H100\"': out of order: 'gpu=' goes right after 'arch='"},
    {"SmsZero",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100\" sms=0",
     141, "column 141: token 'sms=0': must be >= 1"},
    {"SmsBeyondInt",
     "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100\" sms=2147483648",
     141, "column 141: token 'sms=2147483648': value too large (at most 2147483647)"},
    {"LinearBatchTwo",
     "linear dtype=bf16 tokens=16 in=4096 out=4096 batch=2",
     46, "column 46: token 'batch=2': the linear shorthand takes only batch=1 (nn.Linear folds leading dims into tokens)"},
    {"LinearMissingOut",
     "linear dtype=bf16 tokens=16 in=4096",
     36, "column 36: expected token 'out=' but the line ends"},
    {"LinearBadBias",
     "linear dtype=bf16 tokens=16 in=4096 out=4096 bias=2",
     46, "column 46: token 'bias=2': expected 0 or 1"},
    {"LinearOutOfOrder",
     "linear dtype=bf16 in=4096 tokens=16 out=4096",
     19, "column 19: expected 'tokens=' got 'in=4096'"},
    {"LinearBatchBeforeBias",
     "linear dtype=bf16 tokens=16 in=4096 out=4096 batch=1 bias=1",
     54, "column 54: token 'bias=1': out of order: 'bias=' goes right after 'out='"},
    {"LinearTrailingDevice",
     "linear dtype=bf16 tokens=16 in=4096 out=4096 arch=sm_90",
     46, "column 46: unexpected trailing text 'arch=sm_90'"},
};

class MalformedLine : public testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedLine, ReportsTheTokenAndItsColumn) {
  const MalformedCase& c = GetParam();
  const auto result = parse_key(c.line);
  ASSERT_TRUE(std::holds_alternative<KeyError>(result)) << "accepted: " << c.line;
  const KeyError& e = std::get<KeyError>(result);
  EXPECT_EQ(e.column, c.column) << e.message;
  EXPECT_EQ(e.message, c.message);
}

INSTANTIATE_TEST_SUITE_P(KeyErrors, MalformedLine, testing::ValuesIn(kMalformed),
                         [](const testing::TestParamInfo<MalformedCase>& param_info) {
                           return std::string(param_info.param.name);
                         });

// A line whose only fault is a redundant precision spelling is accepted and printed without it.
TEST(KeyErrors, DefaultPrecisionSpelledOutIsAcceptedAndDropped) {
  const std::string_view base =
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 "
      "epilogue=none beta0=1";
  // Appended in place: GCC 12 misreads `std::string(base) + "..."` as an out-of-bounds copy
  // (-Warray-bounds, bug 105329's family) when <string> comes from a precompiled header.
  std::string line(base);
  line += " precision=f32";
  const auto result = parse_key(line);
  ASSERT_TRUE(std::holds_alternative<GemmKey>(result));
  EXPECT_EQ(std::get<GemmKey>(result).shape_line(), base);
}

// Blank runs (tabs included) separate tokens; the printed line uses single spaces.
TEST(KeyErrors, BlankRunsBetweenTokensAreAccepted) {
  const auto result = parse_key(
      " \tgemm  a=f32\tb=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 "
      "batch=1 epilogue=none beta0=1 \r\n");
  ASSERT_TRUE(std::holds_alternative<GemmKey>(result));
  EXPECT_EQ(std::get<GemmKey>(result).shape_line(),
            "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 "
            "batch=1 epilogue=none beta0=1");
}

// kMaxKeyLineBytes bounds every line (LMDB's key limit, less the job index's 9 bytes): one byte over is rejected at the first
// byte over, before anything is read, however the line continues; a line at the limit parses.
TEST(KeyErrors, LinesOverTheKeyLimitAreRejectedByLength) {
  const std::string base =
      "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=64 n=32 k=16 lda=64 ldb=16 ldc=64 batch=1 "
      "epilogue=none beta0=1 arch=sm_90 gpu=\"";
  const std::string tail = "\" sms=132";
  const std::string at_limit = base + std::string(kMaxKeyLineBytes - base.size() - tail.size(), 'G') + tail;
  ASSERT_EQ(at_limit.size(), kMaxKeyLineBytes);
  const auto ok = parse_key(at_limit);
  ASSERT_TRUE(std::holds_alternative<GemmKey>(ok)) << std::get<KeyError>(ok).message;
  EXPECT_EQ(std::get<GemmKey>(ok).full_line(), at_limit);

  for (const std::string& over : {base + std::string(kMaxKeyLineBytes - base.size() - tail.size() + 1, 'G') + tail,
                                  std::string(530000, 'x'), at_limit + " "}) {
    const auto result = parse_key(over);
    ASSERT_TRUE(std::holds_alternative<KeyError>(result));
    const KeyError& e = std::get<KeyError>(result);
    EXPECT_EQ(e.column, kMaxKeyLineBytes + 1);
    EXPECT_EQ(e.message, "column 503: the line is " + std::to_string(over.size()) +
                             " bytes, longer than the 502-byte limit of a key line");
  }
  // The shorthand's expansion stays far below the limit even with the largest numbers.
  const std::string big = "9223372036854775807";
  const auto linear = parse_key("linear dtype=bf16 tokens=" + big + " in=" + big + " out=" + big + " bias=1");
  ASSERT_TRUE(std::holds_alternative<GemmKey>(linear)) << std::get<KeyError>(linear).message;
  EXPECT_LE(std::get<GemmKey>(linear).shape_line().size(), 240u);
}

// Damaged lines (bytes deleted, replaced or inserted) never crash the parser; an error points
// inside the line; a damaged line that still parses prints a line that parses to the same key.
TEST(KeyErrors, DamagedLinesAreRejectedOrStayConsistent) {
  const std::string lines[] = {
      "gemm a=f16 b=f16 c=f32 compute=f32 ta=T tb=T m=64 n=32 k=16 lda=16 ldb=32 ldc=64 batch=3 "
      "stride_a=1024 stride_b=512 stride_c=2048 epilogue=bias beta0=0 precision=tf32 arch=sm_90a "
      "gpu=\"NVIDIA H100 80GB HBM3\" sms=132",
      "linear dtype=bf16 tokens=16 in=4096 out=4096 bias=1 batch=1",
  };
  constexpr std::string_view kAlphabet = "= \"\t#-0123456789abfmnNTsx_";
  std::mt19937_64 rng(7);
  auto pick = [&rng](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  int rejected = 0, accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string line = lines[pick(2)];
    for (std::size_t edits = 1 + pick(3); edits > 0; --edits) {
      const std::size_t at = pick(line.size());
      switch (pick(3)) {
        case 0: line.erase(at, 1 + pick(4)); break;
        case 1: line[at] = kAlphabet[pick(kAlphabet.size())]; break;
        default: line.insert(at, 1, kAlphabet[pick(kAlphabet.size())]); break;
      }
      if (line.empty()) line = "x";
    }
    const auto result = parse_key(line);
    if (const auto* e = std::get_if<KeyError>(&result)) {
      ++rejected;
      ASSERT_GE(e->column, 1u) << line;
      ASSERT_LE(e->column, line.size() + 1) << line;
      const std::string prefix = "column " + std::to_string(e->column) + ": ";
      ASSERT_EQ(e->message.rfind(prefix, 0), 0u) << e->message;
      continue;
    }
    ++accepted;
    const GemmKey& k = std::get<GemmKey>(result);
    const std::string printed = k.device ? k.full_line() : k.shape_line();
    const auto again = parse_key(printed);
    ASSERT_TRUE(std::holds_alternative<GemmKey>(again)) << line << "\n" << printed;
    ASSERT_EQ(std::get<GemmKey>(again), k) << line << "\n" << printed;
  }
  EXPECT_GT(rejected, 10000);
  EXPECT_GT(accepted, 100);  // digit edits and blank insertions keep many lines valid
}

}  // namespace
}  // namespace kd
