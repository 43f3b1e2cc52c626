// The kernel contract, checked on a candidate's text before compiling (check_source) and on NVRTC's
// output after (check_compiled). Every check returns a value; none throws for a bad candidate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "compile/nvrtc_compiler.hpp"
#include "contract/candidate_status.hpp"
#include "plan/launch_plan.hpp"

namespace kd::search {

struct SourceLimits {
  std::size_t max_source_bytes = 256 * 1024;
};

// Static checks, in order, stopping at the first failure:
//   too_large            source over limits.max_source_bytes
//   no_plan / bad_plan   no `kdispatch:plan` comment; one that parse_plan_from_source rejects, or
//                        an entry name that is not a C identifier
//   host_code            host-only headers (<iostream>, <cstdio>, <cuda_runtime.h>, ...), runtime
//                        or driver API calls (cudaMalloc(...), cuLaunchKernel(...)), a main()
//                        definition, __host__ without __device__, <<<...>>> launches
//   missing_entry        a plan entry with no `extern "C" __global__` definition of that name
//   bad_entry_signature  a plan entry declared __global__ but not extern "C"
// Comments and string literals are ignored (asm("trap;") is device code and passes). An entry
// whose name is produced by a macro is not judged here; check_compiled judges it from the PTX.
// Returns the parsed plan when every check passes.
std::variant<LaunchPlan, Rejection> check_source(std::string_view source,
                                                  const SourceLimits& limits = {});

// Checks on NVRTC's output for `arch`, stopping at the first failure:
//   missing_entry              a plan entry with no `.entry NAME(` in the PTX
//   bad_entry_signature        an entry compiled with a mangled (non extern "C") name, or whose
//                              parameters are not exactly one struct of the operator's argument
//                              size (128 bytes: kd_gemm_args; 64: kd_row_args)
//   plan_exceeds_launch_bounds a plan block with more threads than the entry's .maxntid
//   shared_memory_over_limit   static shared memory (from the cubin) + the launch's smem over the
//                              arch's per-block limit (skipped for an arch arch_limits() lacks)
//   bad_plan                   a "pdl" launch whose entry never executes griddepcontrol.wait (nor
//                              calls a function, with the instruction somewhere in the module);
//                              a "pdl" FIRST launch whose entry does not execute it before any
//                              global memory access, branch or call (it depends on the
//                              application's kernel, which may still be writing the inputs)
// Entries the plan does not name are not checked: helpers may be kernels too.
// Returns nullopt when every check passes.
// `args_bytes`: the size of the operator's argument struct (CompileRequest::args_bytes).
std::optional<Rejection> check_compiled(const LaunchPlan& plan, std::string_view ptx,
                                        std::string_view cubin, std::string_view arch,
                                        std::uint64_t args_bytes = CompileRequest::kGemmArgsBytes);

}  // namespace kd::search
