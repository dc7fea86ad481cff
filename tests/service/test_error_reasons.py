"""Every google.rpc.ErrorInfo reason the server can return is documented: in
the comment of protos/lmscore/v1/score.proto and in docs/api.md's error table.

The reasons are read from the C sources: the reason argument of every
rpc_status_set (the service's statuses), every lms_fail (engine and
service errors, mapped onto statuses by rpc_status_from_error), every
json_fail (the HTTP API's reading of its bodies) and every refusal of the
HTTP parser (fail(err, STATUS, reason, ...) in http1_parser.c), less the few
that only startup errors carry, which are logged and never sent.
"""
import glob
import os
import re

SOURCE = os.environ["LMSCORE_SOURCE_DIR"]
# reason -> why no client ever sees it
STARTUP_ONLY = {
    "bad_flag": "a bad command-line flag or variable: lmscored exits 2",
    "bind_failed": "the listen address cannot be bound: lmscored exits 1",
}
CALL = re.compile(r'\b(?:rpc_status_set|lms_fail)\(\s*[^,]+,\s*[A-Z_]+,\s*"([a-z_]+)"', re.S)
# the HTTP API's JSON reading: json_fail(reader, reason, field, ...)
JSON_FAIL = re.compile(r'\bjson_fail\(\s*[^,]+,\s*"([a-z_]+)"', re.S)
# the HTTP parser's refusals: fail(err, 400, reason, ...)
PARSER_FAIL = re.compile(r'\bfail\(\s*err,\s*\d+,\s*"([a-z_]+)"', re.S)


def source_reasons():
    found = {}
    for path in glob.glob(os.path.join(SOURCE, "engine", "**", "*.c"), recursive=True) + \
            glob.glob(os.path.join(SOURCE, "service", "**", "*.c"), recursive=True):
        with open(path, encoding="utf-8") as f:
            text = f.read()
            for reason in CALL.findall(text) + JSON_FAIL.findall(text) + \
                    PARSER_FAIL.findall(text):
                found.setdefault(reason, os.path.relpath(path, SOURCE))
    return found


def read(*parts):
    with open(os.path.join(SOURCE, *parts), encoding="utf-8") as f:
        return f.read()


def proto_comment_reasons():
    comment = read("protos", "lmscore", "v1", "score.proto").split('syntax = "proto3"')[0]
    return set(re.findall(r"^//\s+([a-z][a-z_]+[a-z])\s{2,}", comment, re.M))


def api_md_reasons():
    errors = read("docs", "api.md").split("\n## Errors", 1)[1].split("\n## ", 1)[0]
    table = [line for line in errors.splitlines() if line.startswith("|")]
    return {r for line in table for r in re.findall(r"`([a-z][a-z_]+)`", line.split("|")[2])}


def test_the_scan_finds_the_known_reasons():
    reasons = source_reasons()
    # a few from each kind of call site, so a broken pattern cannot pass
    for r in ("queue_full", "draining", "token_id_exceeds_vocab", "unknown_algorithm",
              "malformed_request", "invalid_truncation_direction", *STARTUP_ONLY):
        assert r in reasons, r


def test_every_reason_is_in_the_proto_comment():
    missing = {r: where for r, where in source_reasons().items()
               if r not in STARTUP_ONLY and r not in proto_comment_reasons()}
    assert not missing, f"reasons the server returns, missing from score.proto's comment: {missing}"


def test_every_reason_is_in_api_md():
    missing = {r: where for r, where in source_reasons().items()
               if r not in STARTUP_ONLY and r not in api_md_reasons()}
    assert not missing, f"reasons the server returns, missing from docs/api.md's table: {missing}"


def test_documented_reasons_exist():
    code = set(source_reasons())
    assert proto_comment_reasons() - code == set()
    assert api_md_reasons() - code == set()
