# Deployment artefacts (tests/packaging): the systemd unit (systemd-analyze),
# the Dockerfile (linters from npm; its runtime packages against the built
# binaries' libraries) and the Kubernetes manifests (schema validation and
# policies). packaging.npm_tools installs the pinned npm tools they use.
set(PACKAGING_TESTS ${CMAKE_CURRENT_SOURCE_DIR}/packaging)
set(PACKAGING_NPM ${CMAKE_BINARY_DIR}/packaging-npm)

add_test(NAME packaging.npm_tools
         COMMAND sh ${PACKAGING_TESTS}/install_npm_tools.sh ${PACKAGING_NPM})
set_tests_properties(packaging.npm_tools PROPERTIES FIXTURES_SETUP packaging_npm TIMEOUT 600)

foreach(suite systemd_unit sandbox dockerfile k8s dashboard)
  add_test(NAME packaging.${suite}
    COMMAND ${PYTHON3} -m pytest -q -p no:cacheprovider -rfE ${PACKAGING_TESTS}/test_${suite}.py)
  set_tests_properties(packaging.${suite} PROPERTIES
    ENVIRONMENT "LMSCORE_BUILD_DIR=${CMAKE_BINARY_DIR};LMSCORE_SOURCE_DIR=${CMAKE_SOURCE_DIR};LMSCORE_NPM_TOOLS=${PACKAGING_NPM};PYTHONDONTWRITEBYTECODE=1"
    TIMEOUT 600)
endforeach()
set_tests_properties(packaging.dockerfile packaging.k8s PROPERTIES FIXTURES_REQUIRED packaging_npm)
