# End-to-end client suites (tests/clients): each starts a real lmscored on a
# loopback port (127.0.0.1, port 0) from this build tree and drives it with
#   clients.cli     the lmscore CLI: every subcommand, formats, error reasons,
#                   a 10,000-item stream
#   clients.python  the Python client package (sync and asyncio), built into
#                   ${CMAKE_BINARY_DIR}/clients/python by the python-client target
#   clients.tls     a TLS daemon (openssl-made CA) through the CLI and Python
#   clients.balancing two daemons behind one target: round_robin spreads calls
#   clients.python_package  the Python client installed by pip from its source
#                   directory, and as a wheel built with python3 -m build, each
#                   into a fresh venv, then a call
#   clients.grpc_cli  docs/clients.md's grpc_cli commands with the real tool,
#                   built from Debian's grpc source package (build_grpc_cli.sh,
#                   once per build tree: about 3 minutes on 2 cores)
#   clients.examples the Node examples (clients/examples/node), whose pinned
#                   npm packages clients.node_modules installs
# The daemon must exit 0 on SIGTERM with no sanitizer report, or the suite fails.
set(CLIENT_TESTS ${CMAKE_CURRENT_SOURCE_DIR}/clients)
set(CLIENT_TEST_ENV
  "LMSCORE_BUILD_DIR=${CMAKE_BINARY_DIR}"
  "LMSCORE_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
  "PYTHONPATH=${CMAKE_BINARY_DIR}/clients/python"
  "PYTHONDONTWRITEBYTECODE=1"
  "LMSCORE_NODE_EXAMPLES=${CMAKE_BINARY_DIR}/node-examples")

add_test(NAME clients.node_modules
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/packaging/install_npm_tools.sh
          ${CMAKE_BINARY_DIR}/node-examples ${CMAKE_SOURCE_DIR}/clients/examples/node)
set_tests_properties(clients.node_modules PROPERTIES FIXTURES_SETUP node_examples TIMEOUT 600)

foreach(suite cli python python_package tls balancing examples grpc_cli)
  add_test(NAME clients.${suite}
    COMMAND ${PYTHON3} -m pytest -q -p no:cacheprovider -rfE ${CLIENT_TESTS}/test_${suite}.py)
  set_tests_properties(clients.${suite} PROPERTIES ENVIRONMENT "${CLIENT_TEST_ENV}" TIMEOUT 900)
endforeach()
set_tests_properties(clients.examples PROPERTIES FIXTURES_REQUIRED node_examples)
set_tests_properties(clients.grpc_cli PROPERTIES TIMEOUT 1500)
