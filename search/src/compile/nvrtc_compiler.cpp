#include "compile/nvrtc_compiler.hpp"

#include <filesystem>
#include <memory>

#include <fmt/ranges.h>

#include "compile/embedded_headers.hpp"
#include "compile/nvrtc_check.hpp"

namespace kd::search {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const noexcept { nvrtcDestroyProgram(&p); }
};
using Program = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

std::string program_log(nvrtcProgram prog, const std::string& name) {
  std::size_t size = 0;
  KD_NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &size), name);
  std::string log(size, '\0');
  if (size > 0) KD_NVRTC_CHECK(nvrtcGetProgramLog(prog, log.data()), name);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The toolkit's include directories, for headers NVRTC 13 does not carry built in (it carries
// none of cuda_fp16.h, cuda_bf16.h, mma.h, cuda_pipeline.h: all need the toolkit's include
// directory; cuda/barrier and cooperative_groups.h also need CCCL's directory beside it).
std::vector<std::string> cuda_include_options() {
  for (const char* dir : {"/usr/local/cuda/include", "/usr/local/cuda/targets/x86_64-linux/include"}) {
    const std::filesystem::path root(dir);
    if (!std::filesystem::exists(root / "cuda_fp16.h")) continue;
    std::vector<std::string> options = {"--include-path=" + root.string()};
    if (std::filesystem::exists(root / "cccl" / "cuda")) {
      options.push_back("--include-path=" + (root / "cccl").string());
    }
    return options;
  }
  return {};
}

// The exact GPU's arch with its arch-specific features: sm_90 compiles as sm_90a, so that
// candidates may use wgmma and setmaxnreg. Such a cubin runs only on compute capability 9.0, which
// is all an exact-arch cubin does anyway.
std::string feature_arch(const std::string& arch) { return arch == "sm_90" ? "sm_90a" : arch; }

std::string virtual_arch(std::string arch) {
  if (arch.rfind("sm_", 0) == 0) arch.replace(0, 3, "compute_");
  return arch;
}

Program create_program(const CompileRequest& request) {
  std::vector<const char*> header_names;
  std::vector<std::string> header_bodies;
  for (const EmbeddedHeader& h : embedded_headers()) {
    header_names.push_back(h.include_name.data());
    header_bodies.emplace_back(h.contents);
  }
  std::vector<const char*> header_ptrs;
  for (const std::string& body : header_bodies) header_ptrs.push_back(body.c_str());
  nvrtcProgram raw = nullptr;
  KD_NVRTC_CHECK(nvrtcCreateProgram(&raw, request.source.c_str(), request.name.c_str(),
                                    static_cast<int>(header_ptrs.size()), header_ptrs.data(),
                                    header_names.data()),
                 request.name);
  return Program(raw);
}

// Compiles with `options`; returns the program when it compiled, nullptr with `log` set when the
// source has errors.
Program compile_program(const CompileRequest& request, const std::vector<std::string>& options,
                        std::string& log) {
  Program prog = create_program(request);
  std::vector<const char*> option_ptrs;
  for (const std::string& o : options) option_ptrs.push_back(o.c_str());
  const nvrtcResult rc =
      nvrtcCompileProgram(prog.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
  log = program_log(prog.get(), request.name);
  if (rc == NVRTC_ERROR_COMPILATION) return nullptr;
  if (rc != NVRTC_SUCCESS) {
    throw Error(ErrorDomain::nvrtc, static_cast<int>(rc),
                fmt::format("nvrtcCompileProgram failed on {}: {} with options [{}]{}{}", request.name,
                            nvrtcGetErrorString(rc), fmt::join(options, " "), log.empty() ? "" : ": ", log));
  }
  return prog;
}

std::string program_ptx(nvrtcProgram prog, const std::string& name) {
  std::size_t size = 0;
  KD_NVRTC_CHECK(nvrtcGetPTXSize(prog, &size), name);
  std::string ptx(size, '\0');
  KD_NVRTC_CHECK(nvrtcGetPTX(prog, ptx.data()), name);
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

}  // namespace

std::vector<std::string> compile_options(const CompileRequest& request) {
  static const std::vector<std::string> include_options = cuda_include_options();
  std::vector<std::string> options = {"--gpu-architecture=" + feature_arch(request.arch), "--std=c++17",
                                      "-default-device", "-lineinfo"};
  options.insert(options.end(), include_options.begin(), include_options.end());
  options.insert(options.end(), request.extra_options.begin(), request.extra_options.end());
  return options;
}

CompileOutput compile_cuda(const CompileRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  };
  CompileOutput out;
  const std::vector<std::string> options = compile_options(request);
  Program prog = compile_program(request, options, out.log);
  if (!prog) {
    out.compile_time = elapsed();
    return out;
  }

  std::size_t size = 0;
  KD_NVRTC_CHECK(nvrtcGetCUBINSize(prog.get(), &size), request.name);
  out.cubin.resize(size);
  KD_NVRTC_CHECK(nvrtcGetCUBIN(prog.get(), out.cubin.data()), request.name);
  // NVRTC 13 keeps the PTX of a real-arch compile; older versions only give it for a virtual
  // arch (compute_90), so compile again for that one.
  if (std::size_t ptx_size = 0; nvrtcGetPTXSize(prog.get(), &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
    out.ptx = program_ptx(prog.get(), request.name);
  } else {
    std::vector<std::string> ptx_options = options;
    ptx_options.front() = "--gpu-architecture=" + virtual_arch(feature_arch(request.arch));
    std::string ptx_log;
    Program ptx_prog = compile_program(request, ptx_options, ptx_log);
    if (!ptx_prog) {
      out.log += ptx_log;
      out.cubin.clear();
      out.compile_time = elapsed();
      return out;
    }
    out.ptx = program_ptx(ptx_prog.get(), request.name);
  }
  out.status = CompileStatus::ok;
  out.compile_time = elapsed();
  return out;
}

std::string nvrtc_version() {
  int major = 0;
  int minor = 0;
  KD_NVRTC_CHECK(nvrtcVersion(&major, &minor), "nvrtc");
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace kd::search
