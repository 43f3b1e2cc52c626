#include "eval/framework_baseline.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "key/row_key.hpp"

namespace kd::eval {
namespace {

constexpr std::string_view kProgram = R"KDPY(
import json, sys
line, device = sys.argv[1], int(sys.argv[2])
try:
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
except Exception as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
    sys.exit(0)
words = line.split()
op, f = words[0], dict(w.split("=", 1) for w in words[1:])
dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[f["dtype"]]
rows, cols = int(f["rows"]), int(f["cols"])
torch.cuda.set_device(device)
dev = torch.device("cuda", device)
w = torch.randn(cols, device=dev, dtype=dtype) if f.get("weight") == "1" else None
b = torch.randn(cols, device=dev, dtype=dtype) if f.get("bias") == "1" else None
if op == "rmsnorm":
    name, call = "F.rms_norm", lambda x: F.rms_norm(x, (cols,), w, 1e-5)
elif op == "layernorm":
    name, call = "F.layer_norm", lambda x: F.layer_norm(x, (cols,), w, b, 1e-5)
else:
    name, call = "torch.softmax", lambda x: torch.softmax(x, dim=-1)
l2 = torch.cuda.get_device_properties(device).L2_cache_size
x_bytes = rows * cols * torch.tensor([], dtype=dtype).element_size()
free, _ = torch.cuda.mem_get_info(device)
copies = max(1, min(64, -(-3 * l2 // x_bytes), 1 + (free // 4) // x_bytes))
xs = [torch.randn(rows, cols, device=dev, dtype=dtype) for _ in range(copies)]
calls = min(64, max(copies, 2, copies * max(1, 16 // copies)))
s = torch.cuda.Stream(device)
with torch.cuda.stream(s):
    for _ in range(3):
        call(xs[0])
torch.cuda.synchronize(device)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    for i in range(calls):
        call(xs[i % copies])
for _ in range(3):
    g.replay()
torch.cuda.synchronize(device)
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
serving, isolated = [], []
for _ in range(30):
    e0.record(); g.replay(); e1.record(); e1.synchronize()
    serving.append(e0.elapsed_time(e1) * 1000.0 / calls)
flush = torch.empty(2 * l2 // 4 + (1 << 20), device=dev, dtype=torch.float32)
for _ in range(20):
    flush.sum()
    e0.record(); call(xs[0]); e1.record(); e1.synchronize()
    isolated.append(e0.elapsed_time(e1) * 1000.0)
print(json.dumps({"name": f"torch {torch.__version__} {name}", "serving_us": serving, "isolated_us": isolated}))
)KDPY";

// The program's file, written once per process.
std::string program_path() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string p = fmt::format("{}/kd-framework-baseline-{}.py", tmp != nullptr && *tmp != 0 ? tmp : "/tmp", ::getpid());
    std::ofstream(p) << kProgram;
    return p;
  }();
  return path;
}

std::variant<FrameworkTimes, std::string> measure(const RowShape& shape, int device_ordinal) {
  const char* python = std::getenv("KD_PYTHON");
  RowKey key;
  static_cast<RowShape&>(key) = shape;
  // The shape line holds only [a-z0-9=_ ]: safe between single quotes.
  const std::string command = fmt::format("timeout 120 {} {} '{}' {} </dev/null 2>&1", python != nullptr && *python != 0 ? python : "python3",
                                          program_path(), key.shape_line(), device_ordinal);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return std::string("cannot start Python for the framework's baseline");
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  // The program's answer is its last line that is a JSON object (torch may warn before it).
  std::string json_text;
  for (std::size_t at = 0; at < out.size();) {
    const std::size_t end = std::min(out.find('\n', at), out.size());
    if (out[at] == '{') json_text = out.substr(at, end - at);
    at = end + 1;
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(json_text);
    if (j.contains("error")) return "torch unavailable: " + j.at("error").get<std::string>();
    FrameworkTimes t;
    t.name = j.at("name").get<std::string>();
    t.serving_us = j.at("serving_us").get<std::vector<double>>();
    t.isolated_us = j.at("isolated_us").get<std::vector<double>>();
    if (t.serving_us.empty() || t.isolated_us.empty()) return std::string("the framework's timing returned no samples");
    return t;
  } catch (const std::exception&) {
    return fmt::format("the framework's timing failed (exit status {}): {}", status,
                       out.substr(0, std::min<std::size_t>(out.size(), 300)));
  }
}

}  // namespace

std::string_view framework_timing_program() { return kProgram; }

std::variant<FrameworkTimes, std::string> framework_times(const RowShape& shape, int device_ordinal) {
  const char* mode = std::getenv("KD_FRAMEWORK_BASELINE");
  if (mode != nullptr && std::string_view(mode) == "off") return std::string("KD_FRAMEWORK_BASELINE=off");
  static std::mutex mu;
  static std::map<std::string, std::variant<FrameworkTimes, std::string>> cache;
  RowKey key;
  static_cast<RowShape&>(key) = shape;
  const std::string k = fmt::format("{} {}", key.shape_line(), device_ordinal);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it == cache.end()) it = cache.emplace(k, measure(shape, device_ordinal)).first;
  return it->second;
}

}  // namespace kd::eval
