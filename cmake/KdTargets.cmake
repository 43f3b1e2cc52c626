# Shared compile settings and the test helper.

add_library(kd_warnings INTERFACE)
target_compile_options(kd_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                       -Wno-missing-field-initializers $<$<BOOL:${KD_WERROR}>:-Werror>)
# GCC 12 at -O2/-O3 reports std::string assignments inside libstdc++ as -Wrestrict overlaps that
# cannot happen (GCC bug 105329, fixed in 13): a warning there, never an error, or Release builds of
# the tests fail on code that is correct.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(kd_warnings INTERFACE -Wno-error=restrict)
endif()
if(KD_SANITIZE)
  target_compile_options(kd_warnings INTERFACE -fsanitize=${KD_SANITIZE} -fno-omit-frame-pointer)
  target_link_options(kd_warnings INTERFACE -fsanitize=${KD_SANITIZE})
endif()
add_library(kdispatch::warnings ALIAS kd_warnings)

# kd_add_gtest(NAME SOURCES ... LIBS ... [LABELS ...] [GPU])
# One test executable; each GoogleTest case is its own ctest test. GPU tests get the label `gpu`
# and report as skipped (not passed) when GTEST_SKIP fires because no GPU is present.
function(kd_add_gtest name)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} kd_test_support GTest::gtest GTest::gtest_main
                        kdispatch::warnings)
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
