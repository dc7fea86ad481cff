# The block formats against ggml itself (docs/models.md): ggml.npm installs the
# pinned prebuilt ggml/llama.cpp libraries (tests/ggml/npm) into
# ${CMAKE_BINARY_DIR}/ggml-ref; ggml.compare checks the engine's decoders and
# the model maker's quantisers against them, type by type.
set(GGML_TESTS ${CMAKE_CURRENT_SOURCE_DIR}/ggml)
set(GGML_REF ${CMAKE_BINARY_DIR}/ggml-ref)
set(GGML_LIB_DIR ${GGML_REF}/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64)

add_test(NAME ggml.npm
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/packaging/install_npm_tools.sh ${GGML_REF}
                 ${GGML_TESTS}/npm)
set_tests_properties(ggml.npm PROPERTIES FIXTURES_SETUP ggml_ref TIMEOUT 600)

add_executable(compare_ggml ${GGML_TESTS}/compare_ggml.c
                            ${CMAKE_SOURCE_DIR}/tools/make_model/dtype.c
                            ${CMAKE_SOURCE_DIR}/tools/make_model/quant.c
                            ${CMAKE_SOURCE_DIR}/tools/make_model/weights.c)
target_include_directories(compare_ggml PRIVATE ${CMAKE_SOURCE_DIR}/tools)
target_link_libraries(compare_ggml PRIVATE lmscore_engine_internal ${CMAKE_DL_LIBS})
add_test(NAME ggml.compare COMMAND compare_ggml ${GGML_LIB_DIR})
set_tests_properties(ggml.compare PROPERTIES FIXTURES_REQUIRED ggml_ref TIMEOUT 300)

add_test(NAME ggml.files
  COMMAND ${PYTHON3} -m pytest -q -s -p no:cacheprovider -rfE ${GGML_TESTS}/test_ggml_files.py)
set_tests_properties(ggml.files PROPERTIES
  FIXTURES_REQUIRED ggml_ref
  ENVIRONMENT "LMSCORE_BUILD_DIR=${CMAKE_BINARY_DIR};LMSCORE_GGML_LIB_DIR=${GGML_LIB_DIR};PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1"
  TIMEOUT 600)
