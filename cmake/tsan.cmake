# -DTG_TSAN=ON: the unit tests of the detectors and of recording, built a second
# time with -fsanitize=thread against a core built the same way, registered as
# tsan/<name> (label "tsan").  Off by default: it doubles the core's build.
#
# Criterion's runner cannot start under TSan (Snaipe/Criterion#274: its
# "inheritable arena" lands in TSan's shadow range), so these binaries use a
# stand-in for the part of Criterion the tests use: tests/lifecycle/tsan/
# (criterion/criterion.h + crt_main.c), one forked child per test of a
# single-threaded runner.  halt_on_error=1 with exitcode=66 makes any TSan
# report fail the test it happened in.
set(TG_TSAN_FLAGS -fsanitize=thread -g -O1 -fno-omit-frame-pointer)
set(TG_TSAN_TESTS test_tuner_table test_cuda_hooks test_interference test_stress test_trace test_turn_quiet
    test_turn_lost_wake test_table_parallel test_thread_hold test_guard_parallel)

set(TG_CRT_DIR ${CMAKE_SOURCE_DIR}/tests/lifecycle/tsan)
# both libraries' sources, bound as in the static archive (tests/unit/core_static.c)
add_library(tg_static_tsan STATIC ${TG_CORE_LIB_SOURCES} ${TG_LOADER_SOURCES} ${CMAKE_SOURCE_DIR}/tests/unit/core_static.c)
target_include_directories(tg_static_tsan PRIVATE ${TG_GENERATED_DIR})
# -Wno-tsan: TSan does not model stand-alone fences (the seqlocks in
# reports/trace_rec.c, cuda/cuda_record.h); gcc warns, and reports them if racy.
target_compile_options(tg_static_tsan PRIVATE ${TG_WARN} ${TG_TSAN_FLAGS} -Wno-tsan -ftls-model=initial-exec)
target_compile_definitions(tg_static_tsan PUBLIC _GNU_SOURCE)
target_include_directories(tg_static_tsan PUBLIC ${CMAKE_SOURCE_DIR} ${TG_CUDA_INCLUDE})
if(TG_UNWIND_INCLUDE)
  target_include_directories(tg_static_tsan PUBLIC ${TG_UNWIND_INCLUDE})
  target_compile_definitions(tg_static_tsan PUBLIC TG_HAVE_LIBUNWIND_H=1)
endif()
target_link_libraries(tg_static_tsan PUBLIC dl pthread)
target_link_options(tg_static_tsan PUBLIC -fsanitize=thread)

set(TG_TSAN_ENV "TSAN_OPTIONS=halt_on_error=1:exitcode=66:die_after_fork=0:second_deadlock_stack=1:history_size=4")
foreach(name ${TG_TSAN_TESTS})
  set(src ${CMAKE_SOURCE_DIR}/tests/unit/${name}.c)
  if(NOT EXISTS ${src})
    continue()
  endif()
  add_executable(tsan_${name} ${src} ${TG_CRT_DIR}/crt_main.c)
  target_compile_options(tsan_${name} PRIVATE ${TG_WARN} ${TG_TSAN_FLAGS} -Wno-tsan) # the fences of the headers they inline
  target_include_directories(tsan_${name} BEFORE PRIVATE ${TG_CRT_DIR} ${CMAKE_SOURCE_DIR}/tests/unit)
  target_link_libraries(tsan_${name} PRIVATE tg_static_tsan)
  if(TARGET fakecuda)
    target_compile_definitions(tsan_${name} PRIVATE FAKECUDA_LIB="$<TARGET_FILE:fakecuda>")
    add_dependencies(tsan_${name} fakecuda)
  endif()
  set_target_properties(tsan_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME tsan/${name} COMMAND tsan_${name})
  set_tests_properties(tsan/${name} PROPERTIES LABELS tsan TIMEOUT 300 ENVIRONMENT "${TG_TSAN_ENV}")
endforeach()
