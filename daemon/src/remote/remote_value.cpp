#include "remote/remote_value.hpp"

#include <cstring>

#include <xxhash.h>

#include "cublaslt/library.hpp"
#include "cuda/driver.hpp"
#include "key/row_key.hpp"

namespace kd::daemon {
namespace {

constexpr std::string_view kMagic = "kdremote";
constexpr std::size_t kHeaderBytes = 8 + 1 + 2 + 4 + 8;

// The majors of cache_store.cpp's lookup, which applications apply to every record they load.
constexpr int kDriverVersionsPerMajor = 1000;
constexpr int kCublasVersionsPerMajor = 10000;
// 0 on either side matches: this machine does not know the version (no GPU, no cuBLASLt), or the
// record depends on no such library (an NVRTC kernel records cuBLAS version 0).
bool same_major(int mine, int theirs, int per_major) {
  return mine == 0 || theirs == 0 || mine / per_major == theirs / per_major;
}

template <class T>
void put_le(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
template <class T>
T get_le(std::string_view in, std::size_t at) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

std::uint64_t checksum(std::string_view key, std::string_view record) {
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, key.data(), key.size());
  XXH3_64bits_update(state, record.data(), record.size());
  const std::uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

constexpr std::string_view kRecordInfix = ":record:";
constexpr std::string_view kLeaseInfix = ":lease:";

}  // namespace

std::string remote_record_key(std::string_view prefix, std::string_view line) {
  return std::string(prefix).append(kRecordInfix).append(line);
}

std::string remote_lease_key(std::string_view prefix, std::string_view line) {
  return std::string(prefix).append(kLeaseInfix).append(line);
}

std::optional<std::string> key_line_of_remote_key(std::string_view prefix, std::string_view key) {
  if (!key.starts_with(prefix) || !key.substr(prefix.size()).starts_with(kRecordInfix)) return std::nullopt;
  return std::string(key.substr(prefix.size() + kRecordInfix.size()));
}

std::string_view to_string(RemoteRejection r) {
  static constexpr std::string_view kNames[] = {"truncated",   "bad_magic",    "unknown_version", "checksum_mismatch",
                                                "wrong_key",   "bad_record",   "bad_key_line",    "failed_gate"};
  return kNames[static_cast<std::size_t>(r)];
}

std::string_view to_string(RemoteMismatch m) {
  static constexpr std::string_view kNames[] = {"schema", "foreign_device", "foreign_versions"};
  return kNames[static_cast<std::size_t>(m)];
}

std::string encode_remote_value(const Record& record) {
  const std::string body = serialize_record(record);
  const std::string& key = record.key_line;
  std::string out;
  out.reserve(kHeaderBytes + key.size() + body.size());
  out.append(kMagic);
  out.push_back(static_cast<char>(kRemoteValueVersion));
  put_le<std::uint16_t>(out, static_cast<std::uint16_t>(key.size()));
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(body.size()));
  put_le<std::uint64_t>(out, checksum(key, body));
  out.append(key);
  out.append(body);
  return out;
}

LocalEnvironment local_environment(std::optional<DevicePart> device) {
  LocalEnvironment e;
  e.device = std::move(device);
  if (const CudaDriver* d = cu_driver()) e.driver_version = d->driver_version;
  if (const CublasLtLibrary* lt = cublaslt_library()) e.cublaslt_version = lt->version;
  return e;
}

RemoteDecode decode_remote_value(std::string_view value, std::string_view line, const LocalEnvironment& local) {
  if (value.size() < kMagic.size()) return RemoteRejection::truncated;
  if (value.substr(0, kMagic.size()) != kMagic) return RemoteRejection::bad_magic;
  if (value.size() < kHeaderBytes) return RemoteRejection::truncated;
  if (static_cast<std::uint8_t>(value[8]) != kRemoteValueVersion) return RemoteRejection::unknown_version;
  const std::size_t key_bytes = get_le<std::uint16_t>(value, 9);
  const std::size_t record_bytes = get_le<std::uint32_t>(value, 11);
  if (value.size() != kHeaderBytes + key_bytes + record_bytes) return RemoteRejection::truncated;
  const std::string_view key = value.substr(kHeaderBytes, key_bytes);
  const std::string_view body = value.substr(kHeaderBytes + key_bytes);
  if (get_le<std::uint64_t>(value, 15) != checksum(key, body)) return RemoteRejection::checksum_mismatch;
  if (key != line) return RemoteRejection::wrong_key;
  auto decoded = deserialize_record(body);
  if (const auto* e = std::get_if<RecordError>(&decoded))
    return *e == RecordError::schema_mismatch ? RemoteDecode(RemoteMismatch::schema) : RemoteDecode(RemoteRejection::bad_record);
  Record& r = std::get<Record>(decoded);
  if (r.key_line != line) return RemoteRejection::wrong_key;
  // Any operator's full key (issue 33: row operators' records travel as GEMMs' do).
  const auto parsed = parse_op_key(r.key_line);
  const auto* k = std::get_if<OpKey>(&parsed);
  const std::optional<DevicePart>* device =
      k == nullptr ? nullptr : std::visit([](const auto& op) { return &op.device; }, *k);
  if (k == nullptr || !device->has_value() || op_full_line(*k) != r.key_line) return RemoteRejection::bad_key_line;
  if (local.device && !(**device == *local.device)) return RemoteMismatch::foreign_device;
  if (!same_major(local.driver_version, r.driver_version, kDriverVersionsPerMajor) ||
      !same_major(static_cast<int>(local.cublaslt_version), r.cublas_version, kCublasVersionsPerMajor))
    return RemoteMismatch::foreign_versions;
  if (r.kind == RecordKind::cublaslt_algo && local.cublaslt_version != 0 &&
      static_cast<std::size_t>(r.cublas_version) != local.cublaslt_version)
    return RemoteMismatch::foreign_versions;
  return std::move(r);
}

}  // namespace kd::daemon
