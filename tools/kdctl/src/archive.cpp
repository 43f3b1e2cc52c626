#include "archive.hpp"

#include <array>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "common/enum_names.hpp"
#include "key/row_key.hpp"
#include "store/cache_store.hpp"

namespace kd::kdctl {
namespace {

constexpr std::string_view kFormat = "kdispatch-archive";
constexpr std::string_view kTrailerTag = "kdispatch-archive-xxh3 ";
constexpr std::size_t kHashHexDigits = 16;
constexpr std::size_t kTrailerBytes = kTrailerTag.size() + kHashHexDigits + 1;
constexpr std::size_t kLengthBytes = 8;

std::string hash_hex(std::string_view bytes) {
  return fmt::format("{:016x}", XXH3_64bits(bytes.data(), bytes.size()));
}

void append_length(std::string& out, std::uint64_t length) {
  for (std::size_t i = 0; i < kLengthBytes; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
}

std::uint64_t read_length(std::string_view at) {
  std::uint64_t length = 0;
  for (std::size_t i = 0; i < kLengthBytes; ++i) {
    length |= static_cast<std::uint64_t>(static_cast<unsigned char>(at[i])) << (8 * i);
  }
  return length;
}

constexpr std::array<Named<RecordRejection>, 6> kRejectionNames{{
    {RecordRejection::corrupted, "corrupted"},
    {RecordRejection::schema_mismatch, "schema_mismatch"},
    {RecordRejection::bad_key, "bad_key"},
    {RecordRejection::foreign_gpu, "foreign_gpu"},
    {RecordRejection::unsound_range, "unsound_range"},
    {RecordRejection::wrong_kind, "wrong_kind"},
}};

std::string describe(const DevicePart& d) {
  return fmt::format("arch={} gpu=\"{}\" sms={}", d.arch, d.gpu, d.sms);
}

std::variant<ArchiveHeader, ArchiveError> parse_header(std::string_view line) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return ArchiveError{"the header line is not a JSON object"};
  try {
    if (j.at("format").get<std::string>() != kFormat) {
      return ArchiveError{fmt::format("the header's format is \"{}\", not \"{}\"",
                                      j.at("format").get<std::string>(), kFormat)};
    }
    const int version = j.at("version").get<int>();
    if (version != kArchiveVersion) {
      return ArchiveError{fmt::format("archive version {}; this kdctl reads version {}", version,
                                      kArchiveVersion)};
    }
    ArchiveHeader h;
    h.device.arch = j.at("arch").get<std::string>();
    h.device.gpu = j.at("gpu").get<std::string>();
    h.device.sms = j.at("sms").get<int>();
    h.created_unix_s = j.at("created_unix_s").get<std::int64_t>();
    h.count = j.at("count").get<std::uint64_t>();
    if (h.device.arch.empty() || h.device.gpu.empty() || h.device.sms <= 0) {
      return ArchiveError{fmt::format("the header's device part is incomplete: {}", describe(h.device))};
    }
    return h;
  } catch (const nlohmann::json::exception& e) {
    return ArchiveError{fmt::format("the header lacks a field or has a mistyped one: {}", e.what())};
  }
}

}  // namespace

std::string_view to_string(RecordRejection r) { return name_in(kRejectionNames, r); }

std::string write_archive(const DevicePart& device, std::int64_t created_unix_s,
                          const std::vector<std::string>& serialized_records) {
  const nlohmann::json header = {{"format", kFormat},      {"version", kArchiveVersion},
                                 {"arch", device.arch},    {"gpu", device.gpu},
                                 {"sms", device.sms},      {"created_unix_s", created_unix_s},
                                 {"count", serialized_records.size()}};
  std::string out = header.dump() + "\n";
  for (const auto& r : serialized_records) {
    append_length(out, r.size());
    out += r;
  }
  const std::string hash = hash_hex(out);
  out += kTrailerTag;
  out += hash;
  out += '\n';
  return out;
}

std::variant<Archive, ArchiveError> read_archive(std::string_view bytes) {
  if (bytes.size() < kTrailerBytes) {
    return ArchiveError{fmt::format("{} bytes: too short to be a kdispatch archive", bytes.size())};
  }
  const std::string_view content = bytes.substr(0, bytes.size() - kTrailerBytes);
  const std::string_view trailer = bytes.substr(content.size());
  if (!trailer.starts_with(kTrailerTag) || trailer.back() != '\n') {
    return ArchiveError{"no checksum trailer at the end: not a kdispatch archive, or truncated"};
  }
  const std::string_view stored = trailer.substr(kTrailerTag.size(), kHashHexDigits);
  if (const std::string actual = hash_hex(content); stored != actual) {
    return ArchiveError{fmt::format("checksum mismatch: the trailer says {}, the contents hash to {} "
                                    "(the file is corrupted)",
                                    stored, actual)};
  }
  const auto newline = content.find('\n');
  if (newline == std::string_view::npos) return ArchiveError{"no header line"};
  auto header = parse_header(content.substr(0, newline));
  if (auto* error = std::get_if<ArchiveError>(&header)) return std::move(*error);

  Archive archive;
  archive.header = std::get<ArchiveHeader>(header);
  std::string_view body = content.substr(newline + 1);
  while (!body.empty()) {
    if (body.size() < kLengthBytes) return ArchiveError{"the body ends inside an entry's length"};
    const std::uint64_t length = read_length(body);
    body.remove_prefix(kLengthBytes);
    if (length > body.size()) {
      return ArchiveError{fmt::format("entry {} claims {} bytes but only {} remain",
                                      archive.records.size(), length, body.size())};
    }
    archive.records.emplace_back(body.substr(0, length));
    body.remove_prefix(length);
  }
  if (archive.records.size() != archive.header.count) {
    return ArchiveError{fmt::format("the header says {} records, the body holds {}",
                                    archive.header.count, archive.records.size())};
  }
  return archive;
}

std::variant<Record, Rejected> check_archived_record(std::string_view bytes, const DevicePart& device) {
  auto decoded = deserialize_record(bytes);
  if (const auto* error = std::get_if<RecordError>(&decoded)) {
    const auto reason = *error == RecordError::schema_mismatch ? RecordRejection::schema_mismatch
                                                               : RecordRejection::corrupted;
    return Rejected{reason, "", fmt::format("record does not decode: {}", to_string(*error))};
  }
  Record& record = std::get<Record>(decoded);
  // Any operator's key (issue 33): a row operator's record travels as a GEMM's does.
  auto parsed = parse_op_key(record.key_line);
  if (const auto* error = std::get_if<KeyError>(&parsed)) {
    return Rejected{RecordRejection::bad_key, record.key_line,
                    fmt::format("key line does not parse: {}", error->message)};
  }
  const OpKey& key = std::get<OpKey>(parsed);
  const std::optional<DevicePart>& keyed = std::visit([](const auto& k) -> const auto& { return k.device; }, key);
  if (!keyed) {
    return Rejected{RecordRejection::bad_key, record.key_line, "key line has no device part"};
  }
  if (*keyed != device) {
    return Rejected{RecordRejection::foreign_gpu, record.key_line,
                    fmt::format("record is for {}, the archive for {}", describe(*keyed), describe(device))};
  }
  // The checks the cache reader makes at load (issue 29; issue 33: a row operator's record is a
  // compiled kernel with an exact plan, or a verdict): refused here, the record is never published
  // to be refused by every process that looks it up.
  if (const auto* gemm = std::get_if<GemmKey>(&key)) {
    if (const auto problem = range_problem(record, *gemm))
      return Rejected{RecordRejection::unsound_range, record.key_line, *problem};
  } else if (record.kind == RecordKind::cublaslt_algo) {
    return Rejected{RecordRejection::wrong_kind, record.key_line,
                    "a row operator's record is a compiled kernel or a verdict, not a cuBLASLt algorithm"};
  } else if (record.plan.has_rules()) {
    return Rejected{RecordRejection::unsound_range, record.key_line,
                    "a row operator's record is exact: its plan has grid rules (only a GEMM range record's may)"};
  }
  return std::move(record);
}

}  // namespace kd::kdctl
