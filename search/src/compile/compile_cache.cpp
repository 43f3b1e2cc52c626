#include "compile/compile_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <xxhash.h>

#include "common/error.hpp"
#include "compile/embedded_headers.hpp"

namespace kd::search {
namespace {

// Bump when the stored layout or what compile_cuda() produces changes.
constexpr std::string_view kCacheFormat = "kdispatch-compile-cache-1";

class Hasher {
public:
  Hasher() : state_(XXH3_createState()) {
    if (!state_ || XXH3_128bits_reset(state_.get()) != XXH_OK) {
      throw Error(ErrorDomain::system, 0, "XXH3 state could not be created");
    }
  }
  // Length-prefixed, so field boundaries are part of the hash.
  void field(std::string_view bytes) {
    const std::uint64_t size = bytes.size();
    XXH3_128bits_update(state_.get(), &size, sizeof size);
    XXH3_128bits_update(state_.get(), bytes.data(), bytes.size());
  }
  std::string hex() const {
    const XXH128_hash_t h = XXH3_128bits_digest(state_.get());
    return fmt::format("{:016x}{:016x}", h.high64, h.low64);
  }

private:
  struct Free {
    void operator()(XXH3_state_t* s) const noexcept { XXH3_freeState(s); }
  };
  std::unique_ptr<XXH3_state_t, Free> state_;
};

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(bytes).str();
}

// Writes `bytes` to a unique temporary beside `path`, then renames it over `path`.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  static std::atomic<std::uint64_t> counter{0};
  const std::filesystem::path temp =
      path.string() + fmt::format(".tmp.{}.{}", ::getpid(), counter.fetch_add(1));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      throw Error(ErrorDomain::system, errno, "cannot write " + temp.string());
    }
  }
  std::filesystem::rename(temp, path);
}

std::string_view status_name(CompileStatus status) {
  return status == CompileStatus::ok ? "ok" : "compile_error";
}

}  // namespace

std::string compile_cache_key(const CompileRequest& request) {
  Hasher h;
  h.field(kCacheFormat);
  h.field(nvrtc_version());
  h.field(request.source);
  h.field(request.name);
  h.field(request.arch);
  for (const std::string& option : compile_options(request)) h.field(option);
  for (const EmbeddedHeader& header : embedded_headers()) {
    h.field(header.include_name);
    h.field(header.contents);
  }
  return h.hex();
}

CompileCache::CompileCache(std::optional<std::filesystem::path> directory, std::size_t memory_entries)
    : directory_(std::move(directory)), memory_entries_(memory_entries) {
  if (directory_) {
    std::error_code ec;
    std::filesystem::create_directories(*directory_, ec);
    if (ec) {
      throw Error(ErrorDomain::system, ec.value(),
                  fmt::format("cannot create compile cache {}: {}", directory_->string(), ec.message()));
    }
  }
}

std::optional<CachedOutput> CompileCache::find(const std::string& key) {
  {
    std::lock_guard lock(mutex_);
    if (const auto it = memory_.find(key); it != memory_.end()) {
      return CachedOutput{it->second, CacheSource::memory};
    }
  }
  if (!directory_) return std::nullopt;
  std::optional<CompileOutput> from_disk = read_disk(key);
  if (!from_disk) return std::nullopt;
  auto output = std::make_shared<const CompileOutput>(std::move(*from_disk));
  remember(key, output);
  return CachedOutput{std::move(output), CacheSource::disk};
}

void CompileCache::store(const std::string& key, std::shared_ptr<const CompileOutput> output) {
  if (directory_) {
    try {
      write_disk(key, *output);
    } catch (const std::exception& e) {
      spdlog::warn("compile cache: not stored on disk: {}", e.what());
    }
  }
  remember(key, std::move(output));
}

void CompileCache::remember(const std::string& key, std::shared_ptr<const CompileOutput> output) {
  if (memory_entries_ == 0) return;
  std::lock_guard lock(mutex_);
  if (!memory_.insert_or_assign(key, std::move(output)).second) return;
  insertion_order_.push_back(key);
  while (insertion_order_.size() > memory_entries_) {
    memory_.erase(insertion_order_.front());
    insertion_order_.pop_front();
  }
}

std::optional<CompileOutput> CompileCache::read_disk(const std::string& key) const {
  const std::filesystem::path base = *directory_ / key;
  const auto meta_text = read_file(base.string() + ".meta");
  if (!meta_text) return std::nullopt;
  try {
    const nlohmann::json meta = nlohmann::json::parse(*meta_text);
    CompileOutput out;
    out.status = meta.at("status").get<std::string>() == "ok" ? CompileStatus::ok : CompileStatus::compile_error;
    out.compile_time = std::chrono::microseconds(meta.at("compile_us").get<std::int64_t>());
    auto log = read_file(base.string() + ".log");
    if (!log) return std::nullopt;
    out.log = std::move(*log);
    if (out.status == CompileStatus::ok) {
      auto cubin = read_file(base.string() + ".cubin");
      auto ptx = read_file(base.string() + ".ptx");
      if (!cubin || !ptx || cubin->size() != meta.at("cubin_bytes").get<std::size_t>() ||
          ptx->size() != meta.at("ptx_bytes").get<std::size_t>()) {
        return std::nullopt;
      }
      out.cubin = std::move(*cubin);
      out.ptx = std::move(*ptx);
    }
    return out;
  } catch (const nlohmann::json::exception& e) {
    spdlog::warn("compile cache: ignoring {}.meta: {}", base.string(), e.what());
    return std::nullopt;
  }
}

void CompileCache::write_disk(const std::string& key, const CompileOutput& output) const {
  const std::string base = (*directory_ / key).string();
  write_file_atomically(base + ".log", output.log);
  if (output.status == CompileStatus::ok) {
    write_file_atomically(base + ".cubin", output.cubin);
    write_file_atomically(base + ".ptx", output.ptx);
  }
  const nlohmann::json meta = {{"status", status_name(output.status)},
                               {"compile_us", output.compile_time.count()},
                               {"cubin_bytes", output.cubin.size()},
                               {"ptx_bytes", output.ptx.size()}};
  write_file_atomically(base + ".meta", meta.dump());
}

}  // namespace kd::search
