#include "common/error.hpp"

#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <lmdb.h>

#include "cuda/driver.hpp"

namespace kd {
namespace {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string debug_detail(std::string_view call, std::string_view where) {
  return fmt::format("{} ({})", call, where);
}

// "<function> failed on <object>: <problem>", or "<object>: <problem>" when the call text names
// no function.
std::string call_message(std::string_view call, std::string_view object, std::string_view problem) {
  const std::string_view function = called_function(call);
  if (function.empty()) return fmt::format("{}: {}", object, problem);
  return fmt::format("{} failed on {}: {}", function, object, problem);
}

struct LmdbProblem {
  int rc;
  std::string_view words;
};
// The codes a user can meet, in words with their usual fix; others read as mdb_strerror says.
constexpr std::array<LmdbProblem, 12> kLmdbProblems{{
    {EACCES, "permission denied (run as the cache's owner or a member of its group)"},
    {EPERM, "operation not permitted (run as the cache's owner or a member of its group)"},
    {EROFS, "read-only file system (use a cache directory on a writable file system)"},
    {ENOSPC, "no space left on the device (free space or move the cache directory)"},
    {ENOENT, "no such file or directory"},
    {EIO, "input/output error reading the disk (the file may be damaged: run kdctl doctor)"},
    {MDB_CORRUPTED, "the cache file is damaged (run kdctl doctor to salvage it)"},
    {MDB_PAGE_NOTFOUND, "the cache file is damaged: a page is missing (run kdctl doctor to salvage it)"},
    {MDB_INVALID, "not an LMDB file (run kdctl doctor to salvage it, or remove it)"},
    {MDB_VERSION_MISMATCH, "written by an incompatible LMDB version"},
    {MDB_READERS_FULL, "too many processes read the cache (LMDB's reader table is full)"},
    {MDB_MAP_FULL, "the cache is full (its map size is reached)"},
}};

}  // namespace

std::string_view called_function(std::string_view call_text) {
  const auto close = call_text.find_last_of(')');
  if (close == std::string_view::npos) return {};
  int depth = 0;
  std::size_t open = std::string_view::npos;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (call_text[i] == ')') ++depth;
    if (call_text[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string_view::npos) return {};
  std::size_t end = open;
  while (end > 0 && call_text[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && is_identifier_char(call_text[begin - 1])) --begin;
  return call_text.substr(begin, end - begin);
}

std::string lmdb_problem(int rc) {
  for (const auto& p : kLmdbProblems) {
    if (p.rc == rc) return std::string(p.words);
  }
  return mdb_strerror(rc);
}

void throw_cuda_error(int result, std::string_view call, std::string_view object,
                      std::string_view where) {
  throw Error(ErrorDomain::cuda, result,
              call_message(call, object, cuda_error_name(static_cast<CUresult>(result))),
              debug_detail(call, where));
}

void throw_lmdb_error(int rc, std::string_view call, std::string_view object,
                      std::string_view where) {
  throw Error(ErrorDomain::lmdb, rc, fmt::format("{}: {}", object, lmdb_problem(rc)),
              debug_detail(call, where));
}

void throw_system_error(int err, std::string_view call, std::string_view object,
                        std::string_view where) {
  throw Error(ErrorDomain::system, err, call_message(call, object, std::strerror(err)),
              debug_detail(call, where));
}

void throw_call_error(ErrorDomain domain, int code, std::string_view problem, std::string_view call,
                      std::string_view object, std::string_view where) {
  throw Error(domain, code, call_message(call, object, problem), debug_detail(call, where));
}

}  // namespace kd
