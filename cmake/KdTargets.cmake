# Shared compile settings and the test helper.

add_library(kd_warnings INTERFACE)
target_compile_options(kd_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                       -Wno-missing-field-initializers $<$<BOOL:${KD_WERROR}>:-Werror>)
# GCC 12 at -O2/-O3 reports std::string copies inside libstdc++ (char_traits' memcpy) as -Wrestrict
# overlaps, -Wstringop-overflow sizes and -Warray-bounds offsets that cannot happen (GCC bugs 105329
# and 105651, fixed in 13): warnings there, never errors, or Release builds of the tests fail on code
# that is correct (GCC 12.2, Debian 12: 14 such errors in 8 test files before these flags).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(kd_warnings INTERFACE -Wno-error=restrict -Wno-error=stringop-overflow
                         -Wno-error=array-bounds)
endif()
if(KD_SANITIZE)
  target_compile_options(kd_warnings INTERFACE -fsanitize=${KD_SANITIZE} -fno-omit-frame-pointer)
  target_link_options(kd_warnings INTERFACE -fsanitize=${KD_SANITIZE})
endif()
add_library(kdispatch::warnings ALIAS kd_warnings)

# Precompiled third-party headers. Most sources include nlohmann/json (about 3.3 s of a -O1
# compile each) and fmt, every test GoogleTest (1.6 s): parsed once per target instead of once per
# source, they took a clean build on 2 cores (CI's) from 17.9 to 15.1 minutes (session 21). Only targets that link
# kdispatch::core use it, so fmt's compile definitions are the same in the header and the sources.
# A build with -DKD_PCH=OFF shows a source that forgot an include. ccache caches these compiles only
# with sloppiness pch_defines,time_macros (ccache's manual, "Precompiled headers").
option(KD_PCH "Precompile nlohmann/json, fmt, GoogleTest (tests) and CLI11 (kdctl) per target" ON)
# A precompiled header that GCC refuses is silently parsed again: -Winvalid-pch makes that a
# warning (an error in CI), so a target whose flags drift from the header's host is noticed.
if(KD_PCH)
  target_compile_options(kd_warnings INTERFACE -Winvalid-pch)
endif()
set(KD_PCH_HEADERS <nlohmann/json.hpp> <fmt/format.h> <string> <string_view> <vector> <map>
    <optional> <variant> <memory> <functional> <chrono> <cstdint>)

# kd_precompile(TARGET [TEST] [HEADERS h...]): TARGET's sources get KD_PCH_HEADERS (with TEST also
# <gtest/gtest.h>, then the HEADERS named) precompiled, when KD_PCH is on and the target has at
# least four sources: building the precompiled header costs about 9 s and saves 3-5 s a source,
# so fewer sources gain nothing.
function(kd_precompile target)
  cmake_parse_arguments(ARG "TEST" "" "HEADERS" ${ARGN})
  get_target_property(sources ${target} SOURCES)
  list(LENGTH sources count)
  if(NOT KD_PCH OR count LESS 4)
    return()
  endif()
  set(headers ${KD_PCH_HEADERS})
  if(ARG_TEST)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers} ${ARG_HEADERS})
endfunction()

# kd_add_gtest(NAME SOURCES ... LIBS ... [LABELS ...] [GPU])
# One test executable; each GoogleTest case is its own ctest test. GPU tests get the label `gpu`
# and report as skipped (not passed) when GTEST_SKIP fires because no GPU is present.
function(kd_add_gtest name)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} kd_test_support GTest::gtest GTest::gtest_main
                        kdispatch::warnings)
  # Every test program reuses kd_test_support's precompiled header instead of building its own
  # (about 9 s each, 30 programs): they all link it, and the defines they add (KD_*, Boost.Asio's)
  # appear nowhere in the precompiled headers, which GCC's rules for reuse allow.
  if(KD_PCH)
    target_precompile_headers(${name} REUSE_FROM kd_test_support)
  endif()
  set(labels ${ARG_LABELS})
  if(ARG_GPU)
    list(APPEND labels gpu)
  endif()
  if(NOT labels)
    set(labels cpu)
  endif()
  set_property(GLOBAL APPEND PROPERTY KD_TEST_EXECUTABLES ${name})
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${labels}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
               ENVIRONMENT "KD_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()
