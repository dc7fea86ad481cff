# The models the project makes for itself (see docs/models.md):
#   models            tiny checkpoints of every family and format, for `make run`
#                     and the tests, under ${CMAKE_BINARY_DIR}/models/
#   model-qwen3-0.6b  models/qwen3-0.6b.gguf, Qwen3-0.6B geometry, for `make bench`
# Each is rebuilt only when lmscore-make-model or the tokenizers change.

target_sources(lmscore-make-model PRIVATE
  ${CMAKE_SOURCE_DIR}/tools/make_model/dtype.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/gguf_write.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/hf_write.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/out.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/quant.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/spec.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/stream.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/tensors.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/vocab.c
  ${CMAKE_SOURCE_DIR}/tools/make_model/weights.c)
target_compile_options(lmscore-make-model PRIVATE ${LMSCORE_OPENMP_FLAG})
target_link_libraries(lmscore-make-model PRIVATE lmscore_model_file)

set(LMSCORE_TOKENIZERS_DIR ${CMAKE_BINARY_DIR}/tokenizers)
set(LMSCORE_MODELS_DIR ${CMAKE_BINARY_DIR}/models)
set(tokenizers_stamp ${LMSCORE_TOKENIZERS_DIR}/.fetched)
add_custom_command(
  OUTPUT ${tokenizers_stamp}
  COMMAND sh ${CMAKE_SOURCE_DIR}/scripts/fetch-tokenizers.sh ${LMSCORE_TOKENIZERS_DIR}
  COMMAND ${CMAKE_COMMAND} -E touch ${tokenizers_stamp}
  DEPENDS ${CMAKE_SOURCE_DIR}/scripts/fetch-tokenizers.sh
  COMMENT "Fetching the pinned tokenizers into ${LMSCORE_TOKENIZERS_DIR}"
  VERBATIM)
add_custom_target(tokenizers DEPENDS ${tokenizers_stamp})

# lmscore_model(NAME PRESET [GGUF] [HF] [ARGS flags...]) makes models/NAME.gguf
# and/or models/NAME-hf/ with the maker; the outputs are the stamp of the rule.
set(LMSCORE_MODEL_FILES)
function(lmscore_model name preset)
  cmake_parse_arguments(M "GGUF;HF" "" "ARGS" ${ARGN})
  set(outputs)
  set(flags --preset ${preset} --name ${name} --tokenizers ${LMSCORE_TOKENIZERS_DIR} ${M_ARGS})
  if(M_GGUF)
    list(APPEND flags --gguf ${LMSCORE_MODELS_DIR}/${name}.gguf)
    list(APPEND outputs ${LMSCORE_MODELS_DIR}/${name}.gguf)
  endif()
  if(M_HF)
    list(APPEND flags --hf ${LMSCORE_MODELS_DIR}/${name}-hf)
    list(APPEND outputs ${LMSCORE_MODELS_DIR}/${name}-hf/config.json)
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${LMSCORE_MODELS_DIR}
    COMMAND lmscore-make-model ${flags}
    DEPENDS lmscore-make-model ${tokenizers_stamp}
    COMMENT "Making model ${name}"
    VERBATIM)
  set(LMSCORE_MODEL_FILES ${LMSCORE_MODEL_FILES} ${outputs} PARENT_SCOPE)
endfunction()

lmscore_model(tiny-qwen3 tiny-qwen3 GGUF HF)
lmscore_model(tiny-qwen2 tiny-qwen2 GGUF HF)
lmscore_model(tiny-llama tiny-llama GGUF HF)
lmscore_model(tiny-llama3 tiny-llama3 GGUF HF)
# Same seed and geometry as their base model, so tests can compare them with it.
lmscore_model(tiny-qwen3-q8_0 tiny-qwen3 GGUF ARGS --dtype q8_0)
lmscore_model(tiny-qwen3-bf16 tiny-qwen3 GGUF HF ARGS --dtype bf16)
lmscore_model(tiny-llama-sharded tiny-llama HF ARGS --shards 3)
add_custom_target(models DEPENDS ${LMSCORE_MODEL_FILES})

lmscore_model(qwen3-0.6b qwen3-0.6b GGUF)
add_custom_target(model-qwen3-0.6b DEPENDS ${LMSCORE_MODELS_DIR}/qwen3-0.6b.gguf)
