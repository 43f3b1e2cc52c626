#include "eval/roofline.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kd::eval {

std::string peak_class(const GemmKey& key) {
  return fmt::format("{}/{}", to_string(key.a), to_string(key.precision));
}

double roofline_floor_s(const GemmKey& key, const Roofline& r, double slack) {
  double floor = 0.0;
  if (r.bandwidth_bytes_per_s > 0.0)
    floor = static_cast<double>(min_bytes(key)) / r.bandwidth_bytes_per_s;
  const auto it = r.peak_flops_per_s.find(peak_class(key));
  if (it != r.peak_flops_per_s.end() && it->second > 0.0)
    floor = std::max(floor, flops(key) / it->second);
  return floor * slack;
}

nlohmann::json to_json(const Roofline& r) {
  return {{"version", kRooflineVersion}, {"gpu", r.gpu}, {"bandwidth_bytes_per_s", r.bandwidth_bytes_per_s},
          {"peak_flops_per_s", r.peak_flops_per_s}};
}

Roofline roofline_from_json(const nlohmann::json& j) {
  try {
    Roofline r;
    r.gpu = j.at("gpu").get<std::string>();
    r.bandwidth_bytes_per_s = j.at("bandwidth_bytes_per_s").get<double>();
    r.peak_flops_per_s = j.at("peak_flops_per_s").get<std::map<std::string, double>>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorDomain::data, 0, std::string("roofline: malformed: ") + e.what());
  }
}

std::string roofline_file_name(const std::string& gpu) {
  std::string name = gpu;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return "roofline-" + name + ".json";
}

std::optional<Roofline> load_roofline(const std::filesystem::path& dir, const std::string& gpu) {
  std::ifstream in(dir / roofline_file_name(gpu));
  if (!in) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("version", 1) != kRooflineVersion) return std::nullopt;  // measured by older rules
    Roofline r = roofline_from_json(j);
    if (r.gpu != gpu || r.bandwidth_bytes_per_s <= 0.0) return std::nullopt;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void save_roofline(const std::filesystem::path& dir, const Roofline& r) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorDomain::system, ec.value(), "roofline: mkdir " + dir.string() + ": " + ec.message());
  const std::filesystem::path final_path = dir / roofline_file_name(r.gpu);
  const std::filesystem::path tmp = final_path.string() + fmt::format(".tmp{}", ::getpid());
  {
    std::ofstream out(tmp);
    out << to_json(r).dump(2) << "\n";
    if (!out) throw Error(ErrorDomain::system, errno, "roofline: cannot write " + tmp.string());
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) throw Error(ErrorDomain::system, ec.value(), "roofline: rename to " + final_path.string() + ": " + ec.message());
}

}  // namespace kd::eval
