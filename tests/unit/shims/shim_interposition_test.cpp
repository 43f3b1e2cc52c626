// The shim against the stand-in cuBLAS / cuBLASLt (fake_cublas/): each test runs a scenario of
// shim_scenarios.cpp in a child process with the shim preloaded and checks what reached the
// stand-in (its call log), what the shim counted (KD_STATS), recorded (KD_RECORD) or would have
// launched (the recording binding, KD_TEST_HOOK=hit).
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "support/temp_dir.hpp"
#include "support/text_file.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using kd::test::read_text;

const std::string kShim = KD_SHIM_PATH;
const std::string kTestHookShim = KD_TESTHOOK_SHIM_PATH;
const std::string kDriverLinked = KD_DRIVER_LINKED_PATH;
const std::string kDriverDlopen = KD_DRIVER_DLOPEN_PATH;
const std::string kScenariosLib = KD_SCENARIOS_LIB_PATH;

enum class Loading { linked, dlopen_local };

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Runs the scenario in a child with the parent's environment minus LD_PRELOAD and KD_*, plus
// `extra_env`; stdout and stderr go to files in `dir`.
RunResult run_scenario(const fs::path& dir, Loading loading, const std::string& scenario,
                       const std::vector<std::string>& extra_env) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    if (v.starts_with("LD_PRELOAD=") || v.starts_with("KD_")) continue;
    env.emplace_back(v);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> args = {loading == Loading::linked ? kDriverLinked : kDriverDlopen,
                                   scenario};
  if (loading == Loading::dlopen_local) args.push_back(kScenariosLib);

  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  RunResult r;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    r.err = std::string("posix_spawn: ") + std::strerror(rc);
    return r;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

// The stand-in's log: lines between LOG-BEGIN and LOG-END.
std::vector<std::string> fake_log(const RunResult& r) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& l : lines_of(r.out)) {
    if (l == "LOG-BEGIN") in = true;
    else if (l == "LOG-END") in = false;
    else if (in) out.push_back(l);
  }
  return out;
}

std::vector<std::string> lines_starting(const std::string& text, std::string_view prefix) {
  std::vector<std::string> out;
  for (const auto& l : lines_of(text)) {
    if (l.starts_with(prefix)) out.push_back(l);
  }
  return out;
}

bool every_ret_is_success(const RunResult& r) {
  const auto rets = lines_starting(r.out, "RET ");
  if (rets.empty()) return false;
  for (const auto& l : rets) {
    if (!l.ends_with(" 0")) return false;
  }
  return true;
}

#define EXPECT_CONTAINS(text, piece) \
  EXPECT_NE((text).find(piece), std::string::npos) << "expected to find: " << (piece) << "\nin:\n" << (text)

// The keys the "all" scenario's calls must translate to, in call order.
const std::vector<std::string> kAllKeys = {
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=64 n=16 k=128 lda=128 ldb=128 ldc=64 batch=1 epilogue=none beta0=1",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=32 n=8 k=16 lda=32 ldb=16 ldc=32 batch=1 epilogue=none beta0=0",
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=1",
    "gemm a=f16 b=f16 c=f32 compute=f32 ta=N tb=T m=128 n=64 k=32 lda=128 ldb=64 ldc=128 batch=1 epilogue=none beta0=1",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=16 n=16 k=16 lda=16 ldb=16 ldc=16 batch=4 stride_a=256 stride_b=256 stride_c=256 epilogue=none beta0=1",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=T m=16 n=8 k=32 lda=32 ldb=8 ldc=16 batch=3 stride_a=512 stride_b=256 stride_c=128 epilogue=none beta0=1",
    "gemm a=f16 b=f16 c=f16 compute=f32 ta=N tb=N m=64 n=64 k=64 lda=64 ldb=64 ldc=64 batch=8 stride_a=4096 stride_b=4096 stride_c=4096 epilogue=none beta0=1",
    "gemm a=f16 b=f16 c=f16 compute=f16 ta=N tb=N m=32 n=32 k=32 lda=32 ldb=32 ldc=32 batch=1 epilogue=none beta0=1",
    "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=bias beta0=1",
    "gemm a=f32 b=f32 c=f32 compute=f32 ta=T tb=N m=4096 n=16 k=4096 lda=4096 ldb=4096 ldc=4096 batch=1 epilogue=none beta0=0 precision=tf32",
};

class ShimInterposition : public ::testing::TestWithParam<Loading> {
protected:
  kd::test::TempDir dir_;
  fs::path record() const { return dir_.path() / "record.txt"; }

  RunResult baseline(const std::string& scenario) {
    const fs::path d = dir_.path() / "baseline";
    fs::create_directories(d);
    return run_scenario(d, GetParam(), scenario, {});
  }
  RunResult with_shim(const std::string& scenario, std::vector<std::string> env,
                      const std::string& shim = kShim) {
    env.push_back("KD_CACHE_DIR=" + (dir_.path() / "cache").string());
    env.push_back("KD_SOCKET=" + (dir_.path() / "no.sock").string());
    env.push_back("LD_PRELOAD=" + shim);
    return run_scenario(dir_.path(), GetParam(), scenario, env);
  }
  std::string resolved_by() const {
    return GetParam() == Loading::linked
               ? "libcublas.so.13=rtld_next libcublasLt.so.13=rtld_next"
               : "libcublas.so.13=dlopen_noload libcublasLt.so.13=dlopen_noload";
  }
};

// With the recording binding's misses (no_entry) the whole miss path is exact.
TEST_P(ShimInterposition, MissesForwardEveryEntryPointUntouchedAndRecordDistinctKeys) {
  const RunResult base = baseline("all");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(fake_log(base).size(), 11u);  // 10 calls + the Lt call cublasGemmEx makes itself

  const RunResult r = with_shim("all", {"KD_STATS=1", "KD_RECORD=" + record().string()},
                                kTestHookShim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(every_ret_is_success(r)) << r.out;
  EXPECT_EQ(fake_log(r), fake_log(base));  // every argument value reached the real function
  EXPECT_EQ(lines_of(read_text(record())), kAllKeys);
  EXPECT_CONTAINS(r.err, "kdispatch_cublas: hits=0 misses=10 fallbacks=0 nested=1 pass_through=0 real_missing=0\n");
  EXPECT_CONTAINS(r.err, resolved_by());
  EXPECT_CONTAINS(r.err, "calls cublasSgemm_v2=1 cublasSgemm_v2_64=1 cublasGemmEx=1 cublasGemmEx_64=1 "
                         "cublasSgemmStridedBatched=1 cublasSgemmStridedBatched_64=1 "
                         "cublasGemmStridedBatchedEx=1 cublasGemmStridedBatchedEx_64=1 cublasLtMatmul=2\n");
  // The reentrancy guard: the Lt call inside cublasGemmEx was forwarded, not intercepted again.
  EXPECT_CONTAINS(r.err, "nested cublasLtMatmul=1\n");
  EXPECT_CONTAINS(r.err, "reasons no_entry=10\n");
}

// The product library (bound to libkdispatch.so's C API) on a machine without a GPU: every call
// misses, whatever the reason libdispatch gives, and is forwarded untouched.
TEST_P(ShimInterposition, ProductShimForwardsAndRecordsEveryMissWithoutAGpu) {
  const RunResult base = baseline("all");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  const RunResult r = with_shim("all", {"KD_STATS=1", "KD_RECORD=" + record().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(every_ret_is_success(r)) << r.out;
  EXPECT_EQ(fake_log(r), fake_log(base));
  EXPECT_EQ(lines_of(read_text(record())), kAllKeys);
  EXPECT_CONTAINS(r.err, "kdispatch_cublas: hits=0 misses=10 fallbacks=0 nested=1 pass_through=0 real_missing=0\n");
  EXPECT_CONTAINS(r.err, resolved_by());
}

TEST_P(ShimInterposition, HitsLaunchWithTranslatedArgumentsAndSkipTheRealFunction) {
  const RunResult r = with_shim("all", {"KD_STATS=1", "KD_TEST_HOOK=hit", "KD_RECORD=" + record().string()},
                                kTestHookShim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(every_ret_is_success(r)) << r.out;
  EXPECT_TRUE(fake_log(r).empty()) << r.out;  // nothing reached the stand-in
  EXPECT_FALSE(fs::exists(record()));          // hits are not misses
  const std::string cublas_ops = "a=0xa000 b=0xb000 c=0xc000 bias=(nil)";
  const std::vector<std::string> expected = {
      "LAUNCH " + kAllKeys[0] + " | " + cublas_ops + " alpha=1.5 beta=0 stream=0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + kAllKeys[1] + " | " + cublas_ops + " alpha=1.5 beta=1 stream=0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + kAllKeys[2] + " | " + cublas_ops + " alpha=1.5 beta=0 stream=0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + kAllKeys[3] + " | " + cublas_ops + " alpha=1.5 beta=0 stream=0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + kAllKeys[4] + " | " + cublas_ops + " alpha=1.5 beta=0 stream=0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + kAllKeys[5] + " | " + cublas_ops + " alpha=1.5 beta=0 stream=0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + kAllKeys[6] + " | " + cublas_ops + " alpha=1.5 beta=0 stream=0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + kAllKeys[7] + " | " + cublas_ops + " alpha=1 beta=0 stream=0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + kAllKeys[8] + " | a=0xa000 b=0xb000 c=0xc000 bias=0xbb00 alpha=1.5 beta=0 stream=0x5000 ws=0x7000 wsbytes=4096",
      "LAUNCH " + kAllKeys[9] + " | a=0xa000 b=0xb000 c=0xc000 bias=(nil) alpha=1.5 beta=1 stream=0x5000 ws=0x7000 wsbytes=4096",
  };
  EXPECT_EQ(lines_starting(r.out, "LAUNCH "), expected);
  EXPECT_CONTAINS(r.err, "kdispatch_cublas: hits=10 misses=0 fallbacks=0 nested=0");
}

TEST_P(ShimInterposition, HandleStateIsReadOnEveryCall) {
  const RunResult r = with_shim("state", {"KD_TEST_HOOK=hit"}, kTestHookShim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string f32 = "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=8 n=8 k=8 lda=8 ldb=8 ldc=8 batch=1 epilogue=none beta0=1";
  const std::string bf16 = "gemm a=bf16 b=bf16 c=bf16 compute=f32 ta=N tb=N m=8 n=8 k=8 lda=8 ldb=8 ldc=8 batch=1 epilogue=none beta0=1";
  const std::string ops = " | a=0xa000 b=0xb000 c=0xc000 bias=(nil) alpha=1.5 beta=0 stream=";
  const std::vector<std::string> expected = {
      "LAUNCH " + f32 + ops + "0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + f32 + " precision=tf32" + ops + "0x6000 ws=(nil) wsbytes=0",
      // TF32 math leaves 16-bit inputs in their default class (they are exact in TF32).
      "LAUNCH " + bf16 + ops + "0x6000 ws=(nil) wsbytes=0",
      // Pedantic math (with the reduced-precision-reduction bit) is strict f32.
      "LAUNCH " + f32 + ops + "0x6000 ws=(nil) wsbytes=0",
  };
  EXPECT_EQ(lines_starting(r.out, "LAUNCH "), expected);
}

// The workspace a tuned kernel may borrow is the handle's cublasSetWorkspace_v2 buffer, and only
// until cublasSetStream_v2 (which resets it in cuBLAS) or the handle's end; the setters still reach
// cuBLAS untouched.
TEST_P(ShimInterposition, HandleWorkspaceIsLentUntilTheHandleResetsIt) {
  const RunResult base = baseline("workspace");
  const RunResult r = with_shim("workspace", {"KD_TEST_HOOK=hit"}, kTestHookShim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string f32 = "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=8 n=8 k=8 lda=8 ldb=8 ldc=8 batch=1 epilogue=none beta0=1";
  const std::string ops = " | a=0xa000 b=0xb000 c=0xc000 bias=(nil) alpha=1.5 beta=0 stream=";
  const std::vector<std::string> expected = {
      "LAUNCH " + f32 + ops + "0x5000 ws=(nil) wsbytes=0",
      "LAUNCH " + f32 + ops + "0x5000 ws=0x7000 wsbytes=33554432",
      "LAUNCH " + f32 + ops + "0x6000 ws=(nil) wsbytes=0",
      "LAUNCH " + f32 + ops + "0x6000 ws=0x7000 wsbytes=4096",
      "LAUNCH " + f32 + ops + "0x5000 ws=(nil) wsbytes=0",
  };
  EXPECT_EQ(lines_starting(r.out, "LAUNCH "), expected);
  // The stand-in saw both cublasSetWorkspace_v2 calls, exactly as without the shim (the GEMMs were
  // hits, so only the setters reached it).
  const auto setters = [](const std::vector<std::string>& log) {
    std::vector<std::string> out;
    for (const std::string& l : log)
      if (l.rfind("cublasSetWorkspace_v2 ", 0) == 0) out.push_back(l);
    return out;
  };
  EXPECT_EQ(fake_log(r), setters(fake_log(base)));
  EXPECT_EQ(setters(fake_log(base)).size(), 2u);
}

TEST_P(ShimInterposition, UnsupportedCallsAreForwardedUntouchedAndCountedByReason) {
  const RunResult base = baseline("unsupported");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(fake_log(base).size(), 12u);
  const RunResult r = with_shim("unsupported", {"KD_STATS=1", "KD_RECORD=" + record().string()},
                                kTestHookShim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(fake_log(r), fake_log(base));
  EXPECT_FALSE(fs::exists(record()));
  EXPECT_CONTAINS(r.err, "kdispatch_cublas: hits=0 misses=0 fallbacks=12 nested=0");
  EXPECT_CONTAINS(r.err, "reasons unsupported.device_scalars=2 unsupported.data_type=1 "
                         "unsupported.compute_type=2 unsupported.epilogue=1 unsupported.transpose=1 "
                         "unsupported.layout=2 unsupported.lt_attribute=1 unsupported.shape=1 "
                         "unsupported.batch_layout=1\n");
}

TEST_P(ShimInterposition, DisabledIsAPurePassThrough) {
  const RunResult base = baseline("all");
  const RunResult r = with_shim("all", {"KD_DISABLE=1", "KD_STATS=1", "KD_TEST_HOOK=hit",
                                        "KD_RECORD=" + record().string()}, kTestHookShim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(fake_log(r), fake_log(base));
  EXPECT_TRUE(lines_starting(r.out, "LAUNCH ").empty());
  EXPECT_FALSE(fs::exists(record()));
  EXPECT_CONTAINS(r.err, "kdispatch_cublas: hits=0 misses=0 fallbacks=0 nested=0 pass_through=11");
}

TEST_P(ShimInterposition, LaunchStageFallbacksAreNotRecordedAsMisses) {
  const RunResult r = with_shim("all", {"KD_STATS=1", "KD_TEST_HOOK=misaligned",
                                        "KD_RECORD=" + record().string()}, kTestHookShim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(fake_log(r).size(), 11u);
  EXPECT_FALSE(fs::exists(record()));
  EXPECT_CONTAINS(r.err, "kdispatch_cublas: hits=0 misses=0 fallbacks=10");
  EXPECT_CONTAINS(r.err, "reasons misaligned=10\n");
}

TEST_P(ShimInterposition, RecordKeepsDistinctLinesAcrossCallsAndRuns) {
  const std::string k8 = "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=8 n=8 k=8 lda=8 ldb=8 ldc=8 batch=1 epilogue=none beta0=1";
  const std::string k16 = "gemm a=f32 b=f32 c=f32 compute=f32 ta=N tb=N m=16 n=8 k=8 lda=16 ldb=8 ldc=16 batch=1 epilogue=none beta0=1";
  for (int run = 0; run < 2; ++run) {
    const RunResult r = with_shim("repeat", {"KD_STATS=1", "KD_RECORD=" + record().string()},
                                  kTestHookShim);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_CONTAINS(r.err, "misses=4 ");
    EXPECT_EQ(lines_of(read_text(record())), (std::vector<std::string>{k8, k16})) << "run " << run;
  }
}

// KD_STATS=1 reports only from processes that called an interposed entry point: a launcher or
// shell that exports it to every child must not get the report from each of them.
TEST_P(ShimInterposition, StatsStaySilentWithoutGemmCalls) {
  const RunResult quiet = with_shim("none", {"KD_STATS=1"}, kTestHookShim);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("kdispatch_cublas:"), std::string::npos) << quiet.err;
  const RunResult passed = with_shim("repeat", {"KD_STATS=1", "KD_DISABLE=1"}, kTestHookShim);
  ASSERT_EQ(passed.exit_code, 0) << passed.err;
  EXPECT_CONTAINS(passed.err, "kdispatch_cublas: hits=0 misses=0 fallbacks=0 nested=0 pass_through=4");
}

INSTANTIATE_TEST_SUITE_P(Loadings, ShimInterposition,
                         ::testing::Values(Loading::linked, Loading::dlopen_local),
                         [](const ::testing::TestParamInfo<Loading>& param_info) {
                           return param_info.param == Loading::linked ? "LinkedRtldNext"
                                                                      : "DlopenLocalNoload";
                         });

// The report's original complaint: KD_STATS=1 in the environment of a program that never loads
// cuBLAS (here /bin/true under the product shim) printed the five-line report too.
TEST(ShimStats, ProgramWithoutCublasPrintsNoReport) {
  kd::test::TempDir dir;
  const fs::path err = dir.path() / "stderr.txt";
  const std::string cmd = "KD_STATS=1 KD_CACHE_DIR='" + (dir.path() / "cache").string() +
                          "' LD_PRELOAD='" + kShim + "' /bin/true 2>'" + err.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_text(err), "");
}

// The product library exports the interposed symbols (nine GEMMs, four handle setters) under the
// real version nodes, and nothing else.
TEST(ShimExports, OnlyTheInterposedSymbolsWithCublasVersionNodes) {
  kd::test::TempDir dir;
  const fs::path out = dir.path() / "objdump.txt";
  const std::string cmd = "objdump -T '" + kShim + "' > '" + out.string() + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "objdump not available";
  std::vector<std::string> defined;
  for (const auto& l : lines_of(read_text(out))) {
    if (l.find("*UND*") != std::string::npos || l.find("*ABS*") != std::string::npos) continue;
    if (l.find(" DF ") == std::string::npos && l.find(" DO ") == std::string::npos) continue;
    std::istringstream in(l);
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    ASSERT_GE(f.size(), 2u) << l;
    defined.push_back(f[f.size() - 2] + " " + f.back());  // "version name"
  }
  std::sort(defined.begin(), defined.end());
  const std::vector<std::string> expected = {
      "libcublas.so.13 cublasCreate_v2",
      "libcublas.so.13 cublasDestroy_v2",
      "libcublas.so.13 cublasGemmEx",
      "libcublas.so.13 cublasGemmEx_64",
      "libcublas.so.13 cublasGemmStridedBatchedEx",
      "libcublas.so.13 cublasGemmStridedBatchedEx_64",
      "libcublas.so.13 cublasSetStream_v2",
      "libcublas.so.13 cublasSetWorkspace_v2",
      "libcublas.so.13 cublasSgemmStridedBatched",
      "libcublas.so.13 cublasSgemmStridedBatched_64",
      "libcublas.so.13 cublasSgemm_v2",
      "libcublas.so.13 cublasSgemm_v2_64",
      "libcublasLt.so.13 cublasLtMatmul",
  };
  EXPECT_EQ(defined, expected);
}

}  // namespace
