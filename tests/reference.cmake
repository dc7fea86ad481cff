# Registers the numpy reference suites (tests/reference, see its README.md):
#   reference.self            the reference checked against itself (no engine needed)
#   reference.engine_vs_numpy the engine's CLI against the reference on every tiny
#                             model under ${CMAKE_BINARY_DIR}/models (the `models`
#                             target makes them; the core six missing is a failure)
# Any non-zero pytest exit fails the ctest entry, including 5 (nothing collected).
function(lmscore_reference_suite name file)
  add_test(NAME ${name}
    COMMAND ${PYTHON3} -m pytest -q -p no:cacheprovider -rfE
            ${CMAKE_SOURCE_DIR}/tests/reference/${file})
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "LMSCORE_BUILD_DIR=${CMAKE_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1")
endfunction()
lmscore_reference_suite(reference.self test_reference_self.py)
lmscore_reference_suite(reference.engine_vs_numpy test_engine_vs_reference.py)
