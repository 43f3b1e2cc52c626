// The remote tier's value format and its checks (daemon/src/remote/remote_value.hpp), and its
// settings (remote_settings.hpp): CPU only, no Redis.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "config/config.hpp"
#include "remote/remote_value.hpp"

namespace kd::daemon {
namespace {

const DevicePart kH100{"sm_90", "NVIDIA H100 80GB HBM3", 132};
const std::string kKey =
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 "
    "epilogue=none beta0=1 arch=sm_90 gpu=\"NVIDIA H100 80GB HBM3\" sms=132";

Record record(const std::string& line = kKey) {
  Record r;
  r.key_line = line;
  r.cubin = "cubin bytes";
  r.driver_version = 13000;
  r.cublas_version = 130100;
  return r;
}

const LocalEnvironment kHere{kH100, 13020, 130100};

template <class T>
T decoded_as(const std::string& value, const std::string& line = kKey, const LocalEnvironment& env = kHere) {
  const RemoteDecode d = decode_remote_value(value, line, env);
  EXPECT_TRUE(std::holds_alternative<T>(d)) << "index " << d.index();
  return std::holds_alternative<T>(d) ? std::get<T>(d) : T{};
}

TEST(RemoteValue, RoundTripsARecordExactly) {
  EXPECT_EQ(decoded_as<Record>(encode_remote_value(record())), record());
}

TEST(RemoteValue, EveryTruncationIsRejectedNeverAccepted) {
  const std::string v = encode_remote_value(record());
  for (std::size_t n = 0; n < v.size(); ++n) {
    const RemoteDecode d = decode_remote_value(v.substr(0, n), kKey, kHere);
    ASSERT_TRUE(std::holds_alternative<RemoteRejection>(d)) << n;
  }
}

TEST(RemoteValue, EveryFlippedByteIsRejected) {
  const std::string v = encode_remote_value(record());
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::string bad = v;
    bad[i] ^= 0x01;
    ASSERT_TRUE(std::holds_alternative<RemoteRejection>(decode_remote_value(bad, kKey, kHere))) << i;
  }
}

TEST(RemoteValue, RejectionsAreNamed) {
  EXPECT_EQ(decoded_as<RemoteRejection>("not a value at all"), RemoteRejection::bad_magic);
  std::string v = encode_remote_value(record());
  v[8] = 9;
  EXPECT_EQ(decoded_as<RemoteRejection>(v), RemoteRejection::unknown_version);
  std::string other = kKey;
  other.replace(other.find("n=16"), 4, "n=32");
  EXPECT_EQ(decoded_as<RemoteRejection>(encode_remote_value(record()), other), RemoteRejection::wrong_key)
      << "a value moved under another key";
  EXPECT_EQ(to_string(RemoteRejection::failed_gate), "failed_gate");
}

TEST(RemoteValue, AnotherEnvironmentIsAMismatchNotARejection) {
  std::string h200 = kKey;
  h200.replace(h200.find("NVIDIA H100 80GB HBM3"), 21, "NVIDIA H200");
  EXPECT_EQ(decoded_as<RemoteMismatch>(encode_remote_value(record(h200)), h200), RemoteMismatch::foreign_device);
  Record old = record();
  old.driver_version = 12080;
  EXPECT_EQ(decoded_as<RemoteMismatch>(encode_remote_value(old)), RemoteMismatch::foreign_versions);
  Record lt = record();
  lt.kind = RecordKind::cublaslt_algo;
  lt.cublaslt_algo = std::string(64, 'a');
  lt.cublas_version = 130000;  // same major, another cuBLASLt: its algorithm means nothing here
  EXPECT_EQ(decoded_as<RemoteMismatch>(encode_remote_value(lt)), RemoteMismatch::foreign_versions);
  // An NVRTC kernel depends on no cuBLAS: its record says version 0 and fits any cuBLASLt here
  // (the daemon's search runner publishes builtin kernels so; on the GPU this once refused them all).
  Record kernel = record();
  kernel.cublas_version = 0;
  EXPECT_EQ(decoded_as<Record>(encode_remote_value(kernel)), kernel);
  // A daemon that knows nothing of its environment (no GPU) checks only what it knows.
  EXPECT_EQ(decoded_as<Record>(encode_remote_value(record(h200)), h200, LocalEnvironment{}), record(h200));
}

TEST(RemoteValue, KeysAreNamespacedAndReadBack) {
  EXPECT_EQ(remote_record_key("fleet", "k"), "fleet:record:k");
  EXPECT_EQ(remote_lease_key("fleet", "k"), "fleet:lease:k");
  EXPECT_EQ(key_line_of_remote_key("fleet", "fleet:record:" + kKey), kKey);
  EXPECT_FALSE(key_line_of_remote_key("fleet", "fleet:lease:" + kKey));
  EXPECT_FALSE(key_line_of_remote_key("fleet", "other:record:" + kKey));
}

TEST(RemoteSettings, UrlsParseOrSayWhy) {
  const auto e = std::get<RemoteEndpoint>(parse_remote_url("redis://cache.internal:7000/3"));
  EXPECT_EQ(e.host, "cache.internal");
  EXPECT_EQ(e.port, 7000);
  EXPECT_EQ(e.db, 3u);
  EXPECT_EQ(e.url(), "redis://cache.internal:7000/3");
  EXPECT_EQ(std::get<RemoteEndpoint>(parse_remote_url("redis://h")).url(), "redis://h:6379/0");
  EXPECT_EQ(std::get<RemoteEndpoint>(parse_remote_url("redis://[::1]:6380")).url(), "redis://[::1]:6380/0");
  const auto why = [](const std::string& url) { return std::get<std::string>(parse_remote_url(url)); };
  EXPECT_NE(why("redis://user:secret@h:1/0").find("remote_password_file"), std::string::npos);
  EXPECT_EQ(why("redis://user:secret@h:1/0").find("secret"), std::string::npos) << "never echoes a credential";
  EXPECT_NE(why("rediss://h:1/0").find("TLS"), std::string::npos);
  EXPECT_NE(why("http://h").find("redis://"), std::string::npos);
  EXPECT_NE(why("redis://h:0").find("port"), std::string::npos);
  EXPECT_NE(why("redis://h:1/x").find("database"), std::string::npos);
}

TEST(RemoteSettings, TheConfigTableLoadsThemWithTheirDefaults) {
  const auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KD_REMOTE") return "redis://127.0.0.1:6390/1";
    if (name == "KD_REMOTE_TRUST") return "trusted";
    return std::nullopt;
  };
  CommandLine no_file;
  const Config c = load_config(no_file, env);
  ASSERT_TRUE(c.remote.endpoint);
  EXPECT_EQ(c.remote.endpoint->port, 6390);
  EXPECT_EQ(c.remote.trust, RemoteTrust::trusted);
  EXPECT_EQ(c.remote.lease.count(), 30000);
  EXPECT_EQ(c.remote.key_prefix, "kdispatch");
  const Config off = load_config(no_file, [](const std::string&) { return std::optional<std::string>(); });
  EXPECT_FALSE(off.remote.endpoint) << "off by default";
  const auto both = [](const std::string& name) -> std::optional<std::string> {
    if (name == "KD_REMOTE_PASSWORD_ENV") return "REDIS_PASSWORD";
    if (name == "KD_REMOTE_PASSWORD_FILE") return "/etc/kdispatch/redis.password";
    return std::nullopt;
  };
  EXPECT_THROW(load_config(no_file, both), Error);
  const auto bad_trust = [](const std::string& name) -> std::optional<std::string> {
    return name == "KD_REMOTE_TRUST" ? std::optional<std::string>("maybe") : std::nullopt;
  };
  EXPECT_THROW(load_config(no_file, bad_trust), Error);
}

}  // namespace
}  // namespace kd::daemon
