// Key lines that stand for a range of token counts (`n=LO..HI`, issue 29): parse, print, the
// errors for bad ranges, and the n token's span that the cache's covering lookup relies on.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "key/gemm_key.hpp"

namespace kd {
namespace {

constexpr std::string_view kRange =
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=768 n=129..256 k=768 lda=768 ldb=768 ldc=768 batch=1 "
    "epilogue=none beta0=1";

GemmKey parsed(std::string_view line) {
  auto r = parse_key(line);
  if (const auto* e = std::get_if<KeyError>(&r)) ADD_FAILURE() << line << ": " << e->message;
  return std::get<GemmKey>(r);
}

std::string error_of(std::string_view line) {
  auto r = parse_key(line);
  if (std::holds_alternative<GemmKey>(r)) return "parsed";
  return std::get<KeyError>(r).message;
}

TEST(KeyRange, ParsesAndPrintsBack) {
  const GemmKey k = parsed(kRange);
  EXPECT_TRUE(k.is_range());
  EXPECT_EQ(k.n, 129);
  EXPECT_EQ(k.n_hi, 256);
  EXPECT_EQ(k.n_last(), 256);
  EXPECT_EQ(k.shape_line(), kRange);
  const DevicePart d{"sm_90", "NVIDIA H100 80GB HBM3", 132};
  const std::string full = k.with_device(d).full_line();
  EXPECT_EQ(parsed(full), k.with_device(d));
  EXPECT_NE(full.find(" n=129..256 "), std::string::npos);
}

TEST(KeyRange, CoversItsValuesOnly) {
  const GemmKey k = parsed(kRange);
  EXPECT_FALSE(k.covers(128));
  EXPECT_TRUE(k.covers(129));
  EXPECT_TRUE(k.covers(200));
  EXPECT_TRUE(k.covers(256));
  EXPECT_FALSE(k.covers(257));
  const GemmKey exact = k.at_n(200);
  EXPECT_FALSE(exact.is_range());
  EXPECT_EQ(exact.n, 200);
  EXPECT_TRUE(exact.covers(200));
  EXPECT_FALSE(exact.covers(201));
  EXPECT_EQ(k.with_n_range(8, 8), k.at_n(8));
}

TEST(KeyRange, ExactAndRangeKeysDiffer) {
  const GemmKey range = parsed(kRange);
  EXPECT_NE(range, range.at_n(129));
  EXPECT_NE(range.hash(), range.at_n(129).hash());
}

TEST(KeyRange, ShorthandTakesTokenRanges) {
  const GemmKey k = parsed("linear dtype=f32 tokens=129..256 in=768 out=768");
  EXPECT_EQ(k.shape_line(), kRange);
}

TEST(KeyRange, BadRangesNameTheFix) {
  const auto line = [](std::string_view n) {
    return "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=768 n=" + std::string(n) +
           " k=768 lda=768 ldb=768 ldc=768 batch=1 epilogue=none beta0=1";
  };
  EXPECT_EQ(error_of(line("256..129")),
            "column 52: token 'n=256..129': the range is inverted (256 > 129): write n=129..256");
  EXPECT_EQ(error_of(line("..64")), "column 52: token 'n=..64': a range needs both ends: write n=LO..HI, e.g. n=33..64");
  EXPECT_EQ(error_of(line("33..")), "column 52: token 'n=33..': a range needs both ends: write n=LO..HI, e.g. n=33..64");
  EXPECT_EQ(error_of(line("8..8")), "column 52: token 'n=8..8': a range of one value: write n=8");
  EXPECT_EQ(error_of(line("0..8")), "column 52: token 'n=0..8': must be >= 1");
  EXPECT_EQ(error_of(line("1...8")), "column 52: token 'n=1...8': expected a decimal integer");
  EXPECT_EQ(error_of("linear dtype=f32 tokens=9..3 in=768 out=768"),
            "column 18: token 'tokens=9..3': the range is inverted (9 > 3): write tokens=3..9");
}

TEST(KeyRange, LeadingDimensionsHoldForTheLargestN) {
  // tb=T: B is stored n x k, so ldb must cover the range's last n.
  const std::string base = "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=T m=64 n=16..64 k=32 lda=64 ldb=";
  const std::string tail = " ldc=64 batch=1 epilogue=none beta0=1";
  EXPECT_EQ(error_of(base + "32" + tail),
            "column 72: token 'ldb=32': ldb must be >= 64 (rows of stored B: tb=T -> the range's largest n)");
  EXPECT_EQ(parsed(base + "64" + tail).n_hi, 64);
}

TEST(KeyRange, NTokenSpanCoversOnlyTheValue) {
  const std::string line(kRange);
  const auto span = n_token_span(line);
  ASSERT_TRUE(span);
  EXPECT_EQ(line.substr(span->begin, span->end - span->begin), "129..256");
  const std::string exact = parsed(kRange).at_n(200).shape_line();
  const auto e = n_token_span(exact);
  ASSERT_TRUE(e);
  EXPECT_EQ(exact.substr(e->begin, e->end - e->begin), "200");
  EXPECT_EQ(exact.substr(0, e->begin), line.substr(0, span->begin));
  EXPECT_EQ(exact.substr(e->end), line.substr(span->end));
  EXPECT_FALSE(n_token_span("linear dtype=f32"));
}

}  // namespace
}  // namespace kd
