# The model maker's tests: determinism, GGUF/safetensors well-formedness,
# GGUF-vs-HF weight identity, Q8_0/BF16 variants, tokenizer metadata, error
# handling. They read the models the `models` target made (make test builds it
# first) and run the maker itself for small throwaway models.
add_test(NAME make_model.py
  COMMAND ${PYTHON3} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/test_make_model.py)
set_tests_properties(make_model.py PROPERTIES
  ENVIRONMENT "LMSCORE_BUILD_DIR=${CMAKE_BINARY_DIR};LMSCORE_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
  TIMEOUT 600)
