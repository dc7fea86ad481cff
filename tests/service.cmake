# The service suites (tests/service): the real lmscored on a loopback port,
# driven by real clients. Python stubs are generated at build time into
# ${SERVICE_TEST_DIR}/pystubs; the health and reflection protos are staged
# under grpc_health/ and grpc_reflection/ (the module names of the grpcio
# health and reflection packages), since grpc/ is the installed grpc package.
# service.npm installs the pinned reflection client for service.reflection.
#   SERVICE_LOAD_SECONDS   how long service.load runs its 32 clients
if(NOT TARGET lmscored)
  return()
endif()
find_program(GRPC_PYTHON_PLUGIN grpc_python_plugin REQUIRED)
set(SERVICE_LOAD_SECONDS 60 CACHE STRING "Seconds the service load test runs")
set(SERVICE_TEST_DIR ${CMAKE_BINARY_DIR}/tests/service)
set(PYSTUBS ${SERVICE_TEST_DIR}/pystubs)
set(PYSTUBS_SRC ${SERVICE_TEST_DIR}/pystubs-src)

set(PY_PROTOS
  lmscore/v1/score.proto:lmscore/v1/score.proto
  google/rpc/status.proto:google/rpc/status.proto
  google/rpc/error_details.proto:google/rpc/error_details.proto
  grpc/health/v1/health.proto:grpc_health/v1/health.proto
  grpc/reflection/v1/reflection.proto:grpc_reflection/v1/reflection.proto
  grpc/reflection/v1alpha/reflection.proto:grpc_reflection/v1alpha/reflection.proto)
set(PY_STAGED)
set(PY_OUTPUTS)
foreach(pair ${PY_PROTOS})
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 src)
  list(GET pair 1 dst)
  configure_file(${CMAKE_SOURCE_DIR}/protos/${src} ${PYSTUBS_SRC}/${dst} COPYONLY)
  list(APPEND PY_STAGED ${dst})
  string(REGEX REPLACE "\\.proto$" "_pb2.py" out ${dst})
  list(APPEND PY_OUTPUTS ${PYSTUBS}/${out})
endforeach()
add_custom_command(
  OUTPUT ${PY_OUTPUTS}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${PYSTUBS}
  COMMAND ${PROTOC} -I${PYSTUBS_SRC} -I${CMAKE_SOURCE_DIR}/protos --python_out=${PYSTUBS}
          --grpc_python_out=${PYSTUBS} --plugin=protoc-gen-grpc_python=${GRPC_PYTHON_PLUGIN}
          ${PY_STAGED}
  WORKING_DIRECTORY ${PYSTUBS_SRC}
  DEPENDS ${PYSTUBS_SRC}/lmscore/v1/score.proto
  COMMENT "protoc: Python stubs for the service tests")
add_custom_target(service_pystubs ALL DEPENDS ${PY_OUTPUTS})

set(SERVICE_ENV
  "LMSCORE_BUILD_DIR=${CMAKE_BINARY_DIR}"
  "LMSCORE_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
  "PYTHONPATH=${PYSTUBS}:${CMAKE_SOURCE_DIR}/tests/service"
  "PYTHONDONTWRITEBYTECODE=1"
  "LMSCORE_REFLECTION_NODE_DIR=${SERVICE_TEST_DIR}/node"
  "LMSCORE_LOAD_SECONDS=${SERVICE_LOAD_SECONDS}")

add_test(NAME service.npm
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/service/install_reflection_client.sh
                 ${SERVICE_TEST_DIR}/node)
set_tests_properties(service.npm PROPERTIES FIXTURES_SETUP service_npm TIMEOUT 600)

foreach(suite rpc errors error_reasons health systemd reflection stream load metrics)
  add_test(NAME service.${suite}
    COMMAND ${PYTHON3} -m pytest -q -p no:cacheprovider -rfE
            ${CMAKE_SOURCE_DIR}/tests/service/test_${suite}.py)
  set_tests_properties(service.${suite} PROPERTIES ENVIRONMENT "${SERVICE_ENV}" TIMEOUT 1200)
endforeach()
set_tests_properties(service.reflection PROPERTIES FIXTURES_REQUIRED service_npm)
# The benchmark script and program still work (a few calls; no timing claims).
add_test(NAME service.bench_smoke
  COMMAND ${CMAKE_COMMAND} -E env "BENCH_SERVICE_ARGS=--iterations 5 --warmup 1"
          sh ${CMAKE_SOURCE_DIR}/bench/service/run.sh ${CMAKE_BINARY_DIR})
set_tests_properties(service.bench_smoke PROPERTIES TIMEOUT 600
  PASS_REGULAR_EXPRESSION "service overhead")
# The load and 20k-item stream tests measure RSS: keep them off each other.
set_tests_properties(service.load service.stream PROPERTIES RESOURCE_LOCK service_rss)
