#include "store/record.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "test_records.hpp"

namespace kd {
namespace {

Record expect_record(const std::variant<Record, RecordError>& decoded) {
  if (const auto* e = std::get_if<RecordError>(&decoded)) {
    ADD_FAILURE() << "unexpected RecordError " << to_string(*e);
    return {};
  }
  return std::get<Record>(decoded);
}

RecordError expect_error(const std::variant<Record, RecordError>& decoded) {
  if (std::holds_alternative<Record>(decoded)) {
    ADD_FAILURE() << "expected a RecordError, got a record";
    return RecordError::truncated;
  }
  return std::get<RecordError>(decoded);
}

// A header ("KDR", schema, checksum of payload) in front of an arbitrary payload.
std::string with_valid_header(std::string_view payload) {
  std::string out = "KDR";
  out.push_back(static_cast<char>(kRecordSchemaVersion));
  const std::uint64_t sum = XXH3_64bits(payload.data(), payload.size());
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((sum >> (8 * i)) & 0xffu));
  out.append(payload);
  return out;
}

TEST(Record, RoundTripsEveryFieldWithBinaryCubin) {
  const Record r = test::make_record(7, "gemm m=7 arch=sm_90");
  ASSERT_NE(r.cubin.find('\0'), std::string::npos);
  const std::string bytes = serialize_record(r);
  EXPECT_EQ(bytes.substr(0, 4), std::string("KDR") + static_cast<char>(kRecordSchemaVersion));
  EXPECT_EQ(expect_record(deserialize_record(bytes)), r);
}

TEST(Record, RoundTripsACublasLtRecordWithAnEmptyPlan) {
  Record r;
  r.key_line = "gemm m=1";
  r.kind = RecordKind::cublaslt_algo;
  r.cublaslt_algo = std::string(64, '\0');
  r.cublaslt_algo[5] = '\x7f';
  r.cublas_version = 130100;
  EXPECT_EQ(expect_record(deserialize_record(serialize_record(r))), r);
}

// A vendor verdict (a search that kept the vendor call) is stored by its kind's name, "vendor".
TEST(Record, RoundTripsAVendorVerdict) {
  Record r;
  r.key_line = "gemm m=1 n=9..16";
  r.kind = RecordKind::vendor;
  r.candidate_us = 10.5;
  r.baseline_us = 9.75;
  r.proposer = "vendor";
  r.idea = "no range winner: lost at n=16";
  r.search_version = 3;
  EXPECT_EQ(expect_record(deserialize_record(serialize_record(r))), r);
  // Only a record that has a search version writes the field: every other keeps its bytes.
  EXPECT_EQ(serialize_record(Record{}).find("search_version"), std::string::npos);
  EXPECT_EQ(to_string(RecordKind::vendor), "vendor");
  EXPECT_NE(serialize_record(r).find("vendor"), std::string::npos);
}

// A split-K reduction launched as a programmatic dependent keeps "pdl" through the cache; a launch
// without it stores no such field, so older records and readers are unaffected.
TEST(Record, RoundTripsAProgrammaticDependentLaunch) {
  Record r = test::make_record(3, "gemm m=3");
  r.plan.launches.push_back({"kd_reduce", {64, 1, 1}, {256, 1, 1}, 0, /*pdl=*/true});
  r.plan.workspace_bytes = 4096;
  const std::string bytes = serialize_record(r);
  EXPECT_EQ(expect_record(deserialize_record(bytes)), r);
  const auto payload = nlohmann::json::from_msgpack(bytes.substr(12));
  EXPECT_FALSE(payload.at("plan").at("launches").at(0).contains("pdl"));
  EXPECT_EQ(payload.at("plan").at("launches").at(1).at("pdl"), true);
}

TEST(Record, RoundTripsARangePlansGridRules) {
  Record r = test::make_record(4, "gemm n=129..256");
  r.plan.launches[0].grid_rule[1] = GridRule{.offset = 63, .div = 64};
  r.plan.launches.push_back({"kd_reduce", {1056, 1, 1}, {256, 1, 1}, 0});
  r.plan.launches[1].grid_rule[0] = GridRule{.scale = 1000, .offset = 255, .div = 256, .cap = 1056};
  const std::string bytes = serialize_record(r);
  EXPECT_EQ(expect_record(deserialize_record(bytes)), r);
  const auto payload = nlohmann::json::from_msgpack(bytes.substr(12));
  EXPECT_TRUE(payload.at("plan").at("launches").at(0).at("grid_rule").at(0).is_null());
  EXPECT_EQ(payload.at("plan").at("launches").at(0).at("grid_rule").at(1).at("div"), 64);
  // A record without rules keeps its bytes: no grid_rule field at all.
  const auto plain = nlohmann::json::from_msgpack(serialize_record(test::make_record(4, "k")).substr(12));
  EXPECT_FALSE(plain.at("plan").at("launches").at(0).contains("grid_rule"));
}

TEST(Record, AMalformedGridRuleIsAMalformedPayload) {
  Record r = test::make_record(5, "gemm n=1..8");
  auto payload = nlohmann::json::from_msgpack(serialize_record(r).substr(12));
  payload["plan"]["launches"][0]["grid_rule"] = nlohmann::json::array({nullptr, {{"div", 0}}, nullptr});
  std::string body;
  nlohmann::json::to_msgpack(payload, body);
  EXPECT_EQ(expect_error(deserialize_record(with_valid_header(body))), RecordError::malformed_payload);
}

TEST(Record, PayloadIsMessagePackWithBinaryBlobs) {
  const std::string bytes = serialize_record(test::make_record(1, "k"));
  const auto payload = nlohmann::json::from_msgpack(bytes.substr(12));
  EXPECT_TRUE(payload.at("cubin").is_binary());
  EXPECT_TRUE(payload.at("ptx").is_binary());
  EXPECT_TRUE(payload.at("cublaslt_algo").is_binary());
  EXPECT_EQ(payload.at("key_line"), "k");
}

TEST(Record, TruncatedInsideTheHeader) {
  const std::string bytes = serialize_record(test::make_record(1, "k"));
  EXPECT_EQ(expect_error(deserialize_record("")), RecordError::truncated);
  EXPECT_EQ(expect_error(deserialize_record(std::string_view(bytes).substr(0, 2))), RecordError::truncated);
  EXPECT_EQ(expect_error(deserialize_record(std::string_view(bytes).substr(0, 11))), RecordError::truncated);
}

TEST(Record, CutInsideThePayloadFailsTheChecksum) {
  const std::string bytes = serialize_record(test::make_record(1, "k"));
  EXPECT_EQ(expect_error(deserialize_record(std::string_view(bytes).substr(0, bytes.size() - 1))),
            RecordError::checksum_mismatch);
}

TEST(Record, WrongMagic) {
  std::string bytes = serialize_record(test::make_record(1, "k"));
  bytes[1] = 'X';
  EXPECT_EQ(expect_error(deserialize_record(bytes)), RecordError::bad_magic);
  EXPECT_EQ(expect_error(deserialize_record("KX")), RecordError::bad_magic);
}

TEST(Record, AnotherSchemaByte) {
  std::string bytes = serialize_record(test::make_record(1, "k"));
  bytes[3] = static_cast<char>(kRecordSchemaVersion + 1);
  EXPECT_EQ(expect_error(deserialize_record(bytes)), RecordError::schema_mismatch);
}

TEST(Record, EveryFlippedPayloadByteFailsTheChecksum) {
  const std::string bytes = serialize_record(test::make_record(3, "gemm m=3"));
  for (std::size_t i = 12; i < bytes.size(); i += 97) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
    EXPECT_EQ(expect_error(deserialize_record(damaged)), RecordError::checksum_mismatch) << "byte " << i;
  }
}

TEST(Record, ValidChecksumOverGarbageIsMalformed) {
  EXPECT_EQ(expect_error(deserialize_record(with_valid_header("\xc1garbage"))),
            RecordError::malformed_payload);
  EXPECT_EQ(expect_error(deserialize_record(with_valid_header(""))), RecordError::malformed_payload);
  // A map length prefix promising 2^32-1 entries.
  EXPECT_EQ(expect_error(deserialize_record(with_valid_header("\xdf\xff\xff\xff\xff"))),
            RecordError::malformed_payload);
}

TEST(Record, ValidMessagePackWithWrongShapeIsMalformed) {
  using nlohmann::json;
  const std::string good = serialize_record(test::make_record(1, "k"));
  const json payload = json::from_msgpack(good.substr(12));
  const auto encoded = [](const json& j) {
    std::string out;
    json::to_msgpack(j, out);
    return with_valid_header(out);
  };
  ASSERT_EQ(expect_record(deserialize_record(encoded(payload))), test::make_record(1, "k"));

  json missing = payload;
  missing.erase("idea");
  EXPECT_EQ(expect_error(deserialize_record(encoded(missing))), RecordError::malformed_payload);
  json mistyped = payload;
  mistyped["cubin"] = "text, not binary";
  EXPECT_EQ(expect_error(deserialize_record(encoded(mistyped))), RecordError::malformed_payload);
  json narrowing = payload;
  narrowing["alignment_bytes"] = -1;
  EXPECT_EQ(expect_error(deserialize_record(encoded(narrowing))), RecordError::malformed_payload);
  json kind = payload;
  kind["kind"] = "mystery";
  EXPECT_EQ(expect_error(deserialize_record(encoded(kind))), RecordError::malformed_payload);
  json plan = payload;
  plan["plan"]["launches"][0]["grid"] = json::array({1, 2});
  EXPECT_EQ(expect_error(deserialize_record(encoded(plan))), RecordError::malformed_payload);
  json pdl = payload;
  pdl["plan"]["launches"][0]["pdl"] = "yes";
  EXPECT_EQ(expect_error(deserialize_record(encoded(pdl))), RecordError::malformed_payload);
  EXPECT_EQ(expect_error(deserialize_record(encoded(json::array({1, 2, 3})))),
            RecordError::malformed_payload);
}

}  // namespace
}  // namespace kd
