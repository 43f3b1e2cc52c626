#include "compile/nvrtc_compiler.hpp"

#include <filesystem>
#include <memory>

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

// The toolkit's include directory, for headers NVRTC does not carry built in.
std::string cuda_include_option() {
  for (const char* dir : {"/usr/local/cuda/include", "/usr/local/cuda/targets/x86_64-linux/include"}) {
    if (std::filesystem::exists(std::filesystem::path(dir) / "cuda_fp16.h")) {
      return std::string("--include-path=") + dir;
    }
  }
  return {};
}

CompileOutput compile_once(const CompileRequest& request, const std::string& arch_option,
                           bool want_cubin) {
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
  Program prog(raw);

  static const std::string include_option = cuda_include_option();
  // -default-device: a candidate is device code only, so unannotated helpers are device functions.
  std::vector<std::string> options = {arch_option, "--std=c++17", "-default-device"};
  if (!include_option.empty()) options.push_back(include_option);
  options.insert(options.end(), request.extra_options.begin(), request.extra_options.end());
  std::vector<const char*> option_ptrs;
  for (const std::string& o : options) option_ptrs.push_back(o.c_str());

  CompileOutput out;
  const nvrtcResult rc =
      nvrtcCompileProgram(prog.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
  out.log = program_log(prog.get(), request.name);
  if (rc == NVRTC_ERROR_COMPILATION) return out;
  KD_NVRTC_CHECK(rc, request.name);

  if (want_cubin) {
    std::size_t size = 0;
    KD_NVRTC_CHECK(nvrtcGetCUBINSize(prog.get(), &size), request.name);
    out.cubin.resize(size);
    KD_NVRTC_CHECK(nvrtcGetCUBIN(prog.get(), out.cubin.data()), request.name);
  } else {
    std::size_t size = 0;
    KD_NVRTC_CHECK(nvrtcGetPTXSize(prog.get(), &size), request.name);
    out.ptx.resize(size);
    KD_NVRTC_CHECK(nvrtcGetPTX(prog.get(), out.ptx.data()), request.name);
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  out.status = CompileStatus::ok;
  return out;
}

}  // namespace

CompileOutput compile_cuda(const CompileRequest& request) {
  // NVRTC emits machine code for a real target (sm_90) and PTX for a virtual one (compute_90);
  // the record wants both, so the source is compiled twice.
  CompileOutput out = compile_once(request, "--gpu-architecture=" + request.arch, true);
  if (out.status != CompileStatus::ok) return out;
  std::string virtual_arch = request.arch;
  if (virtual_arch.rfind("sm_", 0) == 0) virtual_arch.replace(0, 3, "compute_");
  CompileOutput ptx = compile_once(request, "--gpu-architecture=" + virtual_arch, false);
  out.ptx = std::move(ptx.ptx);
  return out;
}

std::string nvrtc_version() {
  int major = 0;
  int minor = 0;
  KD_NVRTC_CHECK(nvrtcVersion(&major, &minor), "nvrtc");
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace kd::search
