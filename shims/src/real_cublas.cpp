#include "real_cublas.hpp"

namespace kd::shim {
namespace {
constinit RealCublas g_real_cublas;
}  // namespace

RealCublas& real_cublas() noexcept { return g_real_cublas; }

}  // namespace kd::shim
