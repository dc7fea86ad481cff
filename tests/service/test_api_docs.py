"""The curl lines of docs/api.md and the README run as written against the
demo model (with the daemon's HTTP port in place of :8080), and answer what
the docs show: every member of a ```json block that follows a curl block is
in the answer with the same value, numbers bit for bit as float32 (the
daemon runs the `generic` tier, whose bits every vector tier gives);
members the docs leave out (created, timing, id) are not compared.

docs/openapi.json, which GET /openapi.json serves, describes them: it is
OpenAPI 3.1 whose schemas are valid JSON Schema draft 2020-12 (checked with
Debian's python3-jsonschema); every live answer of a curl line validates
against its path's schema (the error body for an error), every example the
docs show against the same schema less its `required` lists (the docs
leave members out), and every example in the spec validates whole; the
spec's request examples, sent to the daemon, are answered with what the
spec shows. The spec's paths are the ones the daemon serves, no more, no
fewer, and the daemon serves the file itself.
"""
import copy
import json
import os
import re
import shlex
import struct
import subprocess

import pytest
from jsonschema import Draft202012Validator

from harness import Daemon, Http

SOURCE = os.environ["LMSCORE_SOURCE_DIR"]
DOC_PORT = "127.0.0.1:8080"
with open(os.path.join(SOURCE, "docs", "openapi.json"), encoding="utf-8") as f:
    SPEC = json.load(f)
# what depends on the time, the call or the cost model's pick
VOLATILE = {"created", "timing", "id", "algorithm", "algorithm_reason", "computed_tokens",
            "cached_tokens"}


def complete(command):
    """True when command is a whole shell command (quotes closed, no
    trailing backslash)."""
    if command.rstrip().endswith("\\"):
        return False
    try:
        shlex.split(command)
        return True
    except ValueError:
        return False


def curl_commands(path):
    """(command, the JSON shown after it or None) for each curl command of
    the file, in fenced sh blocks or in indented ones."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, i = [], 0
    while i < len(lines):
        if not lines[i].strip().startswith("curl ") or "head -n1 keys" in lines[i]:
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        command = lines[i].strip()
        while not complete(command):
            i += 1
            command += "\n" + lines[i][indent:]
        i += 1
        shown = None
        rest = lines[i:i + 6]
        if "```" in rest and "```json" in rest:
            start = i + rest.index("```json") + 1
            end = lines.index("```", start)
            shown = json.loads("\n".join(lines[start:end]))
            i = end
        found.append((command.split("   #")[0], shown))
    return found


def f32(x):
    return struct.pack("<f", x)


def same(shown, got, where="answer", skip=frozenset()):
    if isinstance(shown, dict):
        assert isinstance(got, dict), where
        for key, value in shown.items():
            if key in skip:
                continue
            assert key in got, f"{where}.{key} is missing"
            same(value, got[key], f"{where}.{key}", skip)
    elif isinstance(shown, list):
        assert isinstance(got, list) and len(got) == len(shown), where
        for k, (a, b) in enumerate(zip(shown, got)):
            same(a, b, f"{where}[{k}]", skip)
    elif isinstance(shown, float):
        assert isinstance(got, (int, float)) and f32(shown) == f32(got), (where, shown, got)
    else:
        assert shown == got, (where, shown, got)


def without_required(schema):
    """schema with every `required` list dropped: what a shown example,
    which leaves members out, must still satisfy."""
    if isinstance(schema, dict):
        return {k: without_required(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [without_required(v) for v in schema]
    return schema


def validate(schema, value, partial=False):
    """value against schema, whose $refs point into the spec's components."""
    root = dict(schema, components=SPEC["components"])
    if partial:
        root = without_required(root)
    errors = sorted(Draft202012Validator(root).iter_errors(value), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def response_schema(method, path, status):
    responses = SPEC["paths"][path][method.lower()]["responses"]
    return responses[str(status)]["content"]["application/json"]["schema"]


def request_line(command):
    """(method, path) of a curl command."""
    path = re.search(r"http://127\.0\.0\.1:8080(/[^\s'\"]*)", command).group(1)
    return ("POST" if " -d " in command or "\n    -d " in command else "GET"), path


@pytest.fixture(scope="module")
def api():
    with Daemon("--http-listen", "127.0.0.1:0", "--isa", "generic") as d:
        yield Http(d)


@pytest.fixture(scope="module")
def port(api):
    return api.port


DOCS = [("docs/api.md", c) for c in curl_commands(os.path.join(SOURCE, "docs/api.md"))] + \
       [("README.md", c) for c in curl_commands(os.path.join(SOURCE, "README.md"))]


def test_the_docs_have_curl_lines():
    assert sum(1 for doc, (_, shown) in DOCS if doc == "docs/api.md" and shown) >= 4
    assert any(doc == "README.md" for doc, _ in DOCS)


@pytest.mark.parametrize("doc,command,shown", [(d, c, s) for d, (c, s) in DOCS],
                         ids=[f"{d}:{k}" for k, (d, _) in enumerate(DOCS)])
def test_curl_line(port, doc, command, shown):
    assert DOC_PORT in command, command
    run = subprocess.run(["sh", "-c", command.replace(DOC_PORT, f"127.0.0.1:{port}")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    method, path = request_line(command)
    is_error = isinstance(got, dict) and "error" in got
    schema = {"$ref": "#/components/schemas/Error"} if is_error else \
        response_schema(method, path, 200)
    validate(schema, got)
    if shown is not None:
        validate(schema, shown, partial=True)
        same(shown, got)
    elif doc == "README.md":
        assert len(got["scores"]) == 2 and all(len(row) == 2 for row in got["scores"]), got


def test_the_spec_is_openapi_3_1_and_its_schemas_valid():
    assert SPEC["openapi"].startswith("3.1.")
    assert SPEC["paths"] and SPEC["components"]["schemas"]
    for name, schema in SPEC["components"]["schemas"].items():
        Draft202012Validator.check_schema(schema)
    # the check can fail: a schema that is not one
    with pytest.raises(Exception):
        Draft202012Validator.check_schema({"type": "float"})


def operations():
    for path, item in SPEC["paths"].items():
        for method, op in item.items():
            yield method.upper(), path, op


def test_every_spec_example_validates():
    seen = 0
    for method, path, op in operations():
        media = [op.get("requestBody", {}).get("content", {}).get("application/json", {})]
        media += [r.get("content", {}).get("application/json", {})
                  for r in op["responses"].values()]
        for m in media:
            for example in m.get("examples", {}).values():
                validate(m["schema"], example["value"])
                seen += 1
    assert seen >= 10, seen


@pytest.mark.parametrize("method,path", [(m, p) for m, p, op in operations()
                                         if "requestBody" in op])
def test_spec_request_examples_answer_what_the_spec_shows(api, method, path):
    op = SPEC["paths"][path][method.lower()]
    body = op["requestBody"]["content"]["application/json"]["examples"]["demo"]["value"]
    shown = op["responses"]["200"]["content"]["application/json"]["examples"]["demo"]["value"]
    status, headers, got = api.post(path, body)
    assert status == 200, got
    assert headers["x-request-id"], headers
    validate(response_schema(method, path, 200), got)
    same(shown, got, skip=VOLATILE)


def test_the_spec_paths_are_the_served_ones(api):
    status, _, got = api.post("/nothing-here", {})
    assert status == 404, got
    validate({"$ref": "#/components/schemas/Error"}, got)
    served = set(re.findall(r"(GET|POST) (/[^ ,;]+)", got["error"]["message"]))
    assert served and served == {(m, p) for m, p, _ in operations()}, served


def test_the_daemon_serves_the_spec(api):
    status, headers, got = api.post("/openapi.json", b"", method="GET")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert got == SPEC
