# The benchmarks (docs/benchmarks.md):
#   bench_engine   the engine benchmark program (bench/engine/)
#   bench_lm_head  the LM head against an sgemm head (bench/lm_head/)
#   bench          `make bench`: the engine benchmarks on models/qwen3-0.6b.gguf,
#                  then bench/tokenizer/run.sh, bench/service/run.sh (on
#                  tiny-qwen3), bench/sizing/run.sh and bench/lm_head/run.sh;
#                  results in ${CMAKE_BINARY_DIR}/bench-results/, and the
#                  CSVs and the plot copied to docs/bench/.
# ctest bench.engine_smoke runs the program on tiny shapes with tiny-qwen3.
file(GLOB BENCH_ENGINE_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/engine/*.c)
add_executable(bench_engine ${BENCH_ENGINE_SOURCES})
target_link_libraries(bench_engine PRIVATE lmscore_engine)
add_executable(bench_lm_head ${CMAKE_SOURCE_DIR}/bench/lm_head/bench_lm_head.c)
target_compile_options(bench_lm_head PRIVATE ${LMSCORE_OPENMP_FLAG})
target_link_libraries(bench_lm_head PRIVATE lmscore_engine_internal)

set(LMSCORE_BENCH_RESULTS ${CMAKE_BINARY_DIR}/bench-results)
add_custom_target(bench
  COMMAND sh ${CMAKE_SOURCE_DIR}/bench/engine/run-all.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}
          ${LMSCORE_BENCH_RESULTS}
  DEPENDS bench_engine bench_lm_head model-qwen3-0.6b models
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  USES_TERMINAL
  VERBATIM)

add_test(NAME bench.lm_head_smoke
  COMMAND bench_lm_head ${CMAKE_BINARY_DIR}/models/tiny-qwen3.gguf 1)
add_test(NAME bench.engine_smoke
  COMMAND sh ${CMAKE_SOURCE_DIR}/bench/engine/smoke-test.sh $<TARGET_FILE:bench_engine>
          ${CMAKE_BINARY_DIR}/models/tiny-qwen3.gguf ${CMAKE_BINARY_DIR}/bench-smoke
          ${CMAKE_SOURCE_DIR})
