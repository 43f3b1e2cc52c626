// Buckets of token counts (issue 29): the built-in tables, the spec grammar and its errors.
#include "key/n_buckets.hpp"

#include <gtest/gtest.h>

namespace kd {
namespace {

using Bucket = std::optional<std::pair<std::int64_t, std::int64_t>>;

NBuckets table(std::string_view spec) {
  auto parsed = NBuckets::parse(spec);
  if (const auto* e = std::get_if<std::string>(&parsed)) ADD_FAILURE() << spec << ": " << *e;
  return std::get<NBuckets>(parsed);
}

std::string error_of(std::string_view spec) {
  auto parsed = NBuckets::parse(spec);
  return std::holds_alternative<std::string>(parsed) ? std::get<std::string>(parsed) : "parsed";
}

TEST(NBuckets, DefaultIsPowersOfTwo) {
  const NBuckets& d = NBuckets::standard();
  EXPECT_EQ(d.bucket_of(1), (Bucket{{1, 1}}));
  EXPECT_EQ(d.bucket_of(2), (Bucket{{2, 2}}));
  EXPECT_EQ(d.bucket_of(3), (Bucket{{3, 4}}));
  EXPECT_EQ(d.bucket_of(40), (Bucket{{33, 64}}));
  EXPECT_EQ(d.bucket_of(64), (Bucket{{33, 64}}));
  EXPECT_EQ(d.bucket_of(65), (Bucket{{65, 128}}));
  EXPECT_EQ(d.bucket_of(5000), (Bucket{{4097, 8192}}));
  EXPECT_EQ(d.bucket_of(16384), (Bucket{{8193, 16384}}));
  EXPECT_EQ(d.bucket_of(16385), std::nullopt) << "beyond the last edge: searched alone";
  EXPECT_EQ(d.bucket_of(0), std::nullopt);
}

TEST(NBuckets, VllmHoldsOneCaptureSizePerBucket) {
  const NBuckets v = table("vllm");
  EXPECT_EQ(v.edges().size(), 67u);
  EXPECT_EQ(v.bucket_of(4), (Bucket{{3, 4}}));
  EXPECT_EQ(v.bucket_of(8), (Bucket{{5, 8}}));
  EXPECT_EQ(v.bucket_of(13), (Bucket{{9, 16}}));
  EXPECT_EQ(v.bucket_of(512), (Bucket{{505, 512}}));
  EXPECT_EQ(v.bucket_of(513), std::nullopt);
}

TEST(NBuckets, OffHasNoBuckets) {
  EXPECT_EQ(table("off").bucket_of(40), std::nullopt);
  EXPECT_EQ(table("").bucket_of(40), std::nullopt);
}

TEST(NBuckets, ListsStepsAndFactors) {
  const NBuckets t = table("16, 64..256+64, 512..2048*2, 3000");
  EXPECT_EQ(t.edges(), (std::vector<std::int64_t>{16, 64, 128, 192, 256, 512, 1024, 2048, 3000}));
  EXPECT_EQ(t.bucket_of(100), (Bucket{{65, 128}}));
  EXPECT_EQ(t.bucket_of(2500), (Bucket{{2049, 3000}}));
  EXPECT_EQ(t.spec(), "16, 64..256+64, 512..2048*2, 3000");
}

TEST(NBuckets, BadSpecsNameTheItem) {
  EXPECT_EQ(error_of("1,2,,4"), "an empty item (two commas in a row, or a trailing comma)");
  EXPECT_EQ(error_of("64,32"), "buckets: '32' starts at 32, not above the edge before it (64): list edges in increasing order");
  EXPECT_EQ(error_of("8..64"), "buckets: '8..64': a run needs a step: A..B+S or A..B*F");
  EXPECT_EQ(error_of("64..8+8"), "buckets: '64..8+8': the run is inverted (64 > 8)");
  EXPECT_EQ(error_of("8..64*1"), "buckets: '8..64*1': a factor must be at least 2");
  EXPECT_EQ(error_of("powers"), "buckets: 'powers': expected an edge (an integer from 1 to 2^40) or a run A..B+S / A..B*F");
  EXPECT_EQ(error_of("1..100000+1"), "buckets: more than 4096 edges");
}

}  // namespace
}  // namespace kd
