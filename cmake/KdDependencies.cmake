# Finds every dependency. A missing one stops configure with the Debian package that provides it;
# tools/dev/install-deps.sh installs them all.

set(KD_MISSING_PACKAGES "")

macro(kd_require found_var debian_package what)
  if(NOT ${found_var})
    message(SEND_ERROR "kdispatch: ${what} not found: install the Debian package '${debian_package}' "
                       "(tools/dev/install-deps.sh installs every dependency)")
    list(APPEND KD_MISSING_PACKAGES ${debian_package})
  endif()
endmacro()

find_package(PkgConfig QUIET)
kd_require(PkgConfig_FOUND pkg-config "pkg-config")

if(PkgConfig_FOUND)
  pkg_check_modules(LMDB QUIET IMPORTED_TARGET lmdb)
  pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
endif()
kd_require(LMDB_FOUND liblmdb-dev "LMDB")
kd_require(XXHASH_FOUND libxxhash-dev "xxHash")

find_package(Boost 1.74 QUIET COMPONENTS system filesystem)
kd_require(Boost_FOUND "libboost-dev libboost-system-dev libboost-filesystem-dev" "Boost (Asio, Beast, Process)")
find_package(CURL QUIET)
kd_require(CURL_FOUND libcurl4-openssl-dev "libcurl")
find_package(fmt QUIET)
kd_require(fmt_FOUND libfmt-dev "fmt")
find_package(spdlog QUIET)
kd_require(spdlog_FOUND libspdlog-dev "spdlog")
find_package(nlohmann_json 3 QUIET)
kd_require(nlohmann_json_FOUND nlohmann-json3-dev "nlohmann-json")
find_package(tomlplusplus QUIET)
kd_require(tomlplusplus_FOUND libtomlplusplus-dev "toml++")
find_package(CLI11 QUIET)
kd_require(CLI11_FOUND libcli11-dev "CLI11")
# kdctl bench's PNG chart: libpng, which compresses with zlib.
find_package(ZLIB QUIET)
kd_require(ZLIB_FOUND zlib1g-dev "zlib")
find_package(PNG QUIET)
kd_require(PNG_FOUND libpng-dev "libpng")
find_package(Threads REQUIRED)
# The build runs tools/dev/gen_wgmma.py (search/CMakeLists.txt).
find_package(Python3 QUIET COMPONENTS Interpreter)
kd_require(Python3_Interpreter_FOUND python3 "Python 3")

if(KD_BUILD_TESTS)
  find_package(GTest QUIET)
  kd_require(GTest_FOUND "libgtest-dev libgmock-dev" "GoogleTest")
  # The deployment tests (tests/integration/packaging) run systemd-analyze and systemd-sysusers
  # and create users with useradd; without them those tests skip, so a notice, not an error.
  find_program(KD_SYSTEMD_ANALYZE systemd-analyze)
  if(NOT KD_SYSTEMD_ANALYZE)
    message(STATUS "kdispatch: systemd-analyze not found: the systemd unit tests will skip "
                   "(install the Debian package 'systemd')")
  endif()
endif()
if(KD_BUILD_BENCH)
  find_package(benchmark QUIET)
  kd_require(benchmark_FOUND libbenchmark-dev "Google Benchmark")
endif()

# The CUDA Toolkit at /usr/local/cuda (not a Debian package). Its driver library is loaded at run
# time (libdispatch/src/cuda/driver.cpp) so that our programs start on machines without a GPU; we
# take only its headers here.
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit 12 QUIET)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::nvrtc OR NOT TARGET CUDA::cuda_driver)
  message(SEND_ERROR "kdispatch: the CUDA Toolkit (driver headers, NVRTC, cuBLAS) was not found: "
                     "install it at /usr/local/cuda or pass -DCUDAToolkit_ROOT=<dir>")
  list(APPEND KD_MISSING_PACKAGES cuda-toolkit)
elseif(NOT EXISTS "${CUDAToolkit_INCLUDE_DIRS}/cublasLt.h")
  message(SEND_ERROR "kdispatch: cuBLAS/cuBLASLt headers not found under ${CUDAToolkit_INCLUDE_DIRS}")
endif()

if(KD_MISSING_PACKAGES)
  list(REMOVE_DUPLICATES KD_MISSING_PACKAGES)
  string(REPLACE ";" " " _kd_pkgs "${KD_MISSING_PACKAGES}")
  message(FATAL_ERROR "kdispatch: missing dependencies: ${_kd_pkgs}")
endif()

# Header-only interface for the driver API: headers without linking libcuda.
add_library(kd_cuda_headers INTERFACE)
target_include_directories(kd_cuda_headers SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
add_library(kdispatch::cuda_headers ALIAS kd_cuda_headers)
