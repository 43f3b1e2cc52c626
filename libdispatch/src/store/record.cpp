#include "store/record.hpp"

#include <array>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "common/enum_names.hpp"
#include "common/error.hpp"

// Layout: bytes 0..2 "KDR", byte 3 the record schema, bytes 4..11 XXH3_64bits(payload) little
// endian, bytes 12.. the MessagePack payload. The format carries no payload length: a record cut
// short after its header reads as checksum_mismatch, one cut inside its header as truncated.

namespace kd {
namespace {

using nlohmann::json;

constexpr std::string_view kMagic = "KDR";
constexpr std::size_t kSchemaOffset = 3;
constexpr std::size_t kChecksumOffset = 4;
constexpr std::size_t kHeaderBytes = 12;

// Stored by name: a reader that predates a kind reads its records as malformed (corrupted), and
// its calls run the vendor library, which is what a vendor verdict asks for anyway.
constexpr std::array<Named<RecordKind>, 3> kKindNames{{
    {RecordKind::nvrtc_kernel, "nvrtc_kernel"},
    {RecordKind::cublaslt_algo, "cublaslt_algo"},
    {RecordKind::vendor, "vendor"},
}};

json binary(std::string_view bytes) {
  return json::binary(json::binary_t::container_type(bytes.begin(), bytes.end()));
}

json plan_value(const LaunchPlan& plan) {
  json launches = json::array();
  for (const LaunchSpec& l : plan.launches) {
    json launch = {{"entry", l.entry}, {"grid", l.grid}, {"block", l.block}, {"smem", l.smem_bytes}};
    // Only when set: records without it keep their bytes, and a reader that predates the field
    // ignores it and launches the kernel in plain stream order (its griddepcontrol.wait is a no-op).
    if (l.pdl) launch["pdl"] = true;
    // Range records only (issue 29). A reader that predates the field reads the grid at the
    // range's last n; it never looks a range line up (calls are exact), so it never launches one.
    if (l.has_rule()) {
      json rules = json::array();
      for (const auto& r : l.grid_rule) rules.push_back(r ? grid_rule_json(*r) : json());
      launch["grid_rule"] = std::move(rules);
    }
    launches.push_back(std::move(launch));
  }
  return {{"launches", std::move(launches)}, {"workspace", plan.workspace_bytes}};
}

// Decoding throws this (or a json exception) on any mismatch; deserialize_record maps both to
// malformed_payload.
struct Malformed {};

const json& member(const json& obj, const char* name) {
  if (!obj.is_object()) throw Malformed{};
  const auto it = obj.find(name);
  if (it == obj.end()) throw Malformed{};
  return *it;
}

std::string text(const json& obj, const char* name) {
  const json& v = member(obj, name);
  if (!v.is_string()) throw Malformed{};
  return v.get<std::string>();
}

std::string bytes(const json& obj, const char* name) {
  const json& v = member(obj, name);
  if (!v.is_binary()) throw Malformed{};
  const auto& b = v.get_binary();
  return {b.begin(), b.end()};
}

// An integer field that must fit T exactly (no floats, no silent narrowing).
template <class T>
T integer(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) throw Malformed{};
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0 || static_cast<std::uint64_t>(i) > std::numeric_limits<T>::max()) throw Malformed{};
    } else {
      if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max()) throw Malformed{};
    }
    return static_cast<T>(i);
  }
  throw Malformed{};
}
template <class T>
T integer(const json& obj, const char* name) {
  return integer<T>(member(obj, name));
}

double number(const json& obj, const char* name) {
  const json& v = member(obj, name);
  if (!v.is_number()) throw Malformed{};
  return v.get<double>();
}

std::array<std::uint32_t, 3> dim3(const json& obj, const char* name) {
  const json& v = member(obj, name);
  if (!v.is_array() || v.size() != 3) throw Malformed{};
  return {integer<std::uint32_t>(v[0]), integer<std::uint32_t>(v[1]), integer<std::uint32_t>(v[2])};
}

// The plan was validated when the candidate was compiled; the checksum guarantees these are the
// bytes written, so decoding checks types only (a cublaslt record has an empty plan).
LaunchPlan plan_from(const json& v) {
  LaunchPlan plan;
  const json& launches = member(v, "launches");
  if (!launches.is_array()) throw Malformed{};
  for (const json& l : launches) {
    LaunchSpec spec{text(l, "entry"), dim3(l, "grid"), dim3(l, "block"), integer<std::uint32_t>(l, "smem")};
    if (const auto pdl = l.find("pdl"); pdl != l.end()) {
      if (!pdl->is_boolean()) throw Malformed{};
      spec.pdl = pdl->get<bool>();
    }
    if (const auto rules = l.find("grid_rule"); rules != l.end()) {
      if (!rules->is_array() || rules->size() != 3) throw Malformed{};
      for (std::size_t d = 0; d < 3; ++d) {
        if ((*rules)[d].is_null()) continue;
        auto rule = grid_rule_from_json((*rules)[d]);
        if (!std::holds_alternative<GridRule>(rule)) throw Malformed{};
        spec.grid_rule[d] = std::get<GridRule>(rule);
      }
    }
    plan.launches.push_back(std::move(spec));
  }
  plan.workspace_bytes = integer<std::uint64_t>(v, "workspace");
  return plan;
}

RecordKind kind_from(const std::string& name) {
  if (const auto kind = value_of(kKindNames, name)) return *kind;
  throw Malformed{};
}

Record record_from(const json& p) {
  Record r;
  r.key_line = text(p, "key_line");
  r.kind = kind_from(text(p, "kind"));
  r.cubin = bytes(p, "cubin");
  r.ptx = bytes(p, "ptx");
  r.source = text(p, "source");
  r.plan = plan_from(member(p, "plan"));
  r.alignment_bytes = integer<std::uint32_t>(p, "alignment_bytes");
  r.cublaslt_algo = bytes(p, "cublaslt_algo");
  r.candidate_us = number(p, "candidate_us");
  r.baseline_us = number(p, "baseline_us");
  r.sm_clock_mhz = integer<int>(p, "sm_clock_mhz");
  r.validation_report = text(p, "validation_report");
  r.search_id = text(p, "search_id");
  r.proposer = text(p, "proposer");
  r.idea = text(p, "idea");
  r.nvrtc_version = text(p, "nvrtc_version");
  r.driver_version = integer<int>(p, "driver_version");
  r.cublas_version = integer<int>(p, "cublas_version");
  r.created_unix_s = integer<std::int64_t>(p, "created_unix_s");
  // Optional: records written before it have none.
  if (p.contains("search_version")) r.search_version = integer<int>(p, "search_version");
  return r;
}

std::uint64_t checksum(std::string_view payload) { return XXH3_64bits(payload.data(), payload.size()); }

}  // namespace

std::string_view to_string(RecordKind k) { return name_in(kKindNames, k); }

std::string_view to_string(RecordError e) {
  switch (e) {
    case RecordError::truncated: return "truncated";
    case RecordError::bad_magic: return "bad_magic";
    case RecordError::schema_mismatch: return "schema_mismatch";
    case RecordError::checksum_mismatch: return "checksum_mismatch";
    case RecordError::malformed_payload: return "malformed_payload";
  }
  return "unknown";
}

std::string serialize_record(const Record& r) {
  if (r.schema_version > std::numeric_limits<std::uint8_t>::max()) {
    throw Error(ErrorDomain::usage, 0,
                fmt::format("record schema {} does not fit the header's schema byte", r.schema_version));
  }
  json payload = {
      {"key_line", r.key_line},
      {"kind", to_string(r.kind)},
      {"cubin", binary(r.cubin)},
      {"ptx", binary(r.ptx)},
      {"source", r.source},
      {"plan", plan_value(r.plan)},
      {"alignment_bytes", r.alignment_bytes},
      {"cublaslt_algo", binary(r.cublaslt_algo)},
      {"candidate_us", r.candidate_us},
      {"baseline_us", r.baseline_us},
      {"sm_clock_mhz", r.sm_clock_mhz},
      {"validation_report", r.validation_report},
      {"search_id", r.search_id},
      {"proposer", r.proposer},
      {"idea", r.idea},
      {"nvrtc_version", r.nvrtc_version},
      {"driver_version", r.driver_version},
      {"cublas_version", r.cublas_version},
      {"created_unix_s", r.created_unix_s},
  };
  // Only where set, so that every other record keeps its bytes.
  if (r.search_version != 0) payload["search_version"] = r.search_version;
  std::string body;
  json::to_msgpack(payload, body);

  std::string out;
  out.reserve(kHeaderBytes + body.size());
  out.append(kMagic);
  out.push_back(static_cast<char>(r.schema_version));
  const std::uint64_t sum = checksum(body);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((sum >> (8 * i)) & 0xffu));
  out.append(body);
  return out;
}

std::variant<Record, RecordError> deserialize_record(std::string_view bytes_in) {
  const std::string_view magic = bytes_in.substr(0, kMagic.size());
  if (magic != kMagic.substr(0, magic.size())) return RecordError::bad_magic;
  if (bytes_in.size() < kHeaderBytes) return RecordError::truncated;
  const auto schema = static_cast<std::uint8_t>(bytes_in[kSchemaOffset]);
  if (schema != kRecordSchemaVersion) return RecordError::schema_mismatch;
  std::uint64_t stored = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    stored |= std::uint64_t{static_cast<std::uint8_t>(bytes_in[kChecksumOffset + i])} << (8 * i);
  }
  const std::string_view payload = bytes_in.substr(kHeaderBytes);
  if (checksum(payload) != stored) return RecordError::checksum_mismatch;
  try {
    Record r = record_from(json::from_msgpack(payload));
    r.schema_version = schema;
    return r;
  } catch (const Malformed&) {
    return RecordError::malformed_payload;
  } catch (const json::exception&) {
    return RecordError::malformed_payload;
  } catch (const std::exception&) {
    // bad_alloc, length_error: a damaged length prefix can ask for an absurd allocation first.
    return RecordError::malformed_payload;
  }
}

}  // namespace kd
