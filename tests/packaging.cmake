# Deployment artefacts (tests/packaging): the systemd unit (systemd-analyze),
# the Dockerfile (linters from npm; its runtime packages against the built
# binaries' libraries; packaging.image builds it with podman, this build tree
# standing in for its build stage, and runs it), the Kubernetes manifests
# (schema validation and policies) and the Grafana dashboard.
# packaging.npm_tools installs the pinned npm tools they use.
set(PACKAGING_TESTS ${CMAKE_CURRENT_SOURCE_DIR}/packaging)
set(PACKAGING_NPM ${CMAKE_BINARY_DIR}/packaging-npm)

add_test(NAME packaging.npm_tools
         COMMAND sh ${PACKAGING_TESTS}/install_npm_tools.sh ${PACKAGING_NPM})
set_tests_properties(packaging.npm_tools PROPERTIES FIXTURES_SETUP packaging_npm TIMEOUT 600)

foreach(suite systemd_unit sandbox dockerfile k8s dashboard image)
  add_test(NAME packaging.${suite}
    COMMAND ${PYTHON3} -m pytest -q -p no:cacheprovider -rfEs ${PACKAGING_TESTS}/test_${suite}.py)
  set_tests_properties(packaging.${suite} PROPERTIES
    ENVIRONMENT "LMSCORE_BUILD_DIR=${CMAKE_BINARY_DIR};LMSCORE_SOURCE_DIR=${CMAKE_SOURCE_DIR};LMSCORE_NPM_TOOLS=${PACKAGING_NPM};PYTHONDONTWRITEBYTECODE=1"
    TIMEOUT 600)
endforeach()
set_tests_properties(packaging.dockerfile packaging.k8s PROPERTIES FIXTURES_REQUIRED packaging_npm)
# The first run makes the base images (debootstrap, a few minutes); later runs
# reuse ${CMAKE_BINARY_DIR}/image-cache and podman's layers.
set_tests_properties(packaging.image PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77)
set_property(TEST packaging.image APPEND PROPERTY ENVIRONMENT LMSCORE_SKIP_RETURN_CODE=77)
