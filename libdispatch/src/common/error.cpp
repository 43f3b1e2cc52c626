#include "common/error.hpp"

#include <cstring>

#include <fmt/format.h>
#include <lmdb.h>

#include "cuda/driver.hpp"

namespace kd {

void throw_cuda_error(int result, std::string_view call, std::string_view object,
                      std::string_view where) {
  throw Error(ErrorDomain::cuda, result,
              fmt::format("{} failed on {}: {} ({})", call, object,
                          cuda_error_name(static_cast<CUresult>(result)), where));
}

void throw_lmdb_error(int rc, std::string_view call, std::string_view object,
                      std::string_view where) {
  throw Error(ErrorDomain::lmdb, rc,
              fmt::format("{} failed on {}: {} ({})", call, object, mdb_strerror(rc), where));
}

void throw_system_error(int err, std::string_view call, std::string_view object,
                        std::string_view where) {
  throw Error(ErrorDomain::system, err,
              fmt::format("{} failed on {}: {} ({})", call, object, std::strerror(err), where));
}

}  // namespace kd
