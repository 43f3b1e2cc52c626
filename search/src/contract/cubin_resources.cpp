#include "contract/cubin_resources.hpp"

#include <elf.h>

#include <cstring>

namespace kd::search {
namespace {

template <typename T>
std::optional<T> read_at(std::string_view bytes, std::uint64_t offset) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

}  // namespace

std::optional<std::map<std::string, std::uint64_t>> cubin_static_shared_bytes(std::string_view cubin) {
  const auto header = read_at<Elf64_Ehdr>(cubin, 0);
  if (!header || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
      header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_shentsize != sizeof(Elf64_Shdr)) {
    return std::nullopt;
  }
  const auto section = [&](std::uint64_t index) {
    return read_at<Elf64_Shdr>(cubin, header->e_shoff + index * sizeof(Elf64_Shdr));
  };
  const auto names = section(header->e_shstrndx);
  if (!names || names->sh_offset > cubin.size() || cubin.size() - names->sh_offset < names->sh_size) {
    return std::nullopt;
  }
  const std::string_view name_table = cubin.substr(names->sh_offset, names->sh_size);

  constexpr std::string_view kPrefix = ".nv.shared.";
  std::map<std::string, std::uint64_t> shared;
  for (std::uint64_t i = 0; i < header->e_shnum; ++i) {
    const auto s = section(i);
    if (!s || s->sh_name >= name_table.size()) return std::nullopt;
    std::string_view name = name_table.substr(s->sh_name);
    name = name.substr(0, name.find('\0'));
    if (!name.starts_with(kPrefix)) continue;
    const std::string_view kernel = name.substr(kPrefix.size());
    // Kernel names cannot contain '.', so "reserved.N" is the system's section, not a kernel's.
    if (kernel.starts_with("reserved.")) continue;
    shared[std::string(kernel)] = s->sh_size;
  }
  return shared;
}

}  // namespace kd::search
