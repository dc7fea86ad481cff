"""The spec is the server: bodies made from docs/openapi.json's request
examples, one or two members changed at a time to values of every JSON type
and the edges the spec names (each member's enum members, bounds and one
past them, null, 2.0 for an integer, enum outsiders, U+0000, negative ids,
a missing required member), are classified by the spec itself (a JSON Schema validator) and sent to a live daemon. A body the
spec allows must be answered 200 (and the answer must be what the spec
says), or refused only for what JSON Schema cannot say (the model's
vocabulary and tokenizer, the served names, the server's limits); a body
the spec refuses must be refused 4xx. Any other outcome, or a 5xx, is a
disagreement and fails. The draws are seeded: the same bodies every run.
"""
import copy
import json
import os
import random

import pytest
from jsonschema import Draft202012Validator

from harness import Daemon, Http, http_error

SOURCE = os.environ.get("LMSCORE_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))
with open(os.path.join(SOURCE, "docs", "openapi.json"), encoding="utf-8") as f:
    SPEC = json.load(f)

# What only the live model or the server's configuration decides: a body
# valid by the spec may be refused for these, and only these.
BEYOND_THE_SCHEMA = {
    "token_id_exceeds_vocab",  # the vocabulary's size is the model's
    "label_not_single_token",  # the tokenizer's
    "untokenizable_text",
    "sequence_too_long",       # --max-sequence-tokens and the tokens a text makes
    "empty_query",             # whether an empty text makes any token
    "unknown_model",           # the served names
}

# Values of every JSON type, and the edges of the spec's schemas.
POOL = [None, True, False, 0, 1, 2, 2.0, 2e0, -1, 2.5, 1e-3, 2147483648, -7, 7,
        "", "x", "yes", "\u0000", "a\u0000b", "Left", "Right", "sideways",
        "ALGORITHM_SERIAL", "ALGORITHM_NOPE", "tiny-qwen3",
        [], [1], [2.0], [-1], [1.5], ["a"], [" yes", " no"], [None], [[1]], [{"text": "d"}],
        ["d", {"text": "e"}], [{"title": "t"}], {}, {"text": "d"}]
ABSENT = object()


def request_schema(path):
    op = SPEC["paths"][path]["post"]
    media = op["requestBody"]["content"]["application/json"]
    return media["schema"], [e["value"] for e in media.get("examples", {}).values()]


def response_schema(path):
    return SPEC["paths"][path]["post"]["responses"]["200"]["content"]["application/json"][
        "schema"]


def validator(schema):
    return Draft202012Validator(dict(schema, components=SPEC["components"]))


def resolve(schema):
    while isinstance(schema, dict) and "$ref" in schema:
        schema = SPEC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def schema_values(schema, depth=0):
    """Values on and just past the edges the schema names: its enum and
    const members, each bound and one beyond, the bound as a float, an
    element's values inside a one-element array."""
    schema = resolve(schema)
    if not isinstance(schema, dict) or depth > 2:
        return []
    out = list(schema.get("enum", [])) + ([schema["const"]] if "const" in schema else [])
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        out += schema_values(branch, depth + 1)
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    for bound, step in (("minimum", -1), ("maximum", 1)):
        if bound in schema:
            out += [schema[bound], schema[bound] + step, float(schema[bound])]
    if "array" in types and "items" in schema:
        out += [[v] for v in schema_values(schema["items"], depth + 1)[:6]]
    return out


def bodies(path, n_pairs):
    """(body, valid by the spec) for every member of path's request schema
    set to every pool value and left out, and n_pairs random pairs of
    such changes; seeded."""
    schema, examples = request_schema(path)
    resolved = schema
    if "$ref" in schema:
        resolved = SPEC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    members = sorted(resolved["properties"])
    check = validator(schema)
    rng = random.Random(39)
    out = []

    def change(body, key, v):
        if v is ABSENT:
            body.pop(key, None)
        else:
            body[key] = copy.deepcopy(v)

    for base in examples:
        for key in members:
            for v in POOL + schema_values(resolved["properties"][key]) + [ABSENT]:
                body = copy.deepcopy(base)
                change(body, key, v)
                out.append(body)
        for _ in range(n_pairs):
            body = copy.deepcopy(base)
            for key in rng.sample(members, 2):
                change(body, key, rng.choice(POOL + [ABSENT]))
            out.append(body)
    seen, unique = set(), []
    for body in out:
        key = json.dumps(body, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append((body, check.is_valid(body)))
    return unique


@pytest.fixture(scope="module")
def api():
    with Daemon("--http-listen", "127.0.0.1:0", "--max-sequence-tokens", "256") as d:
        yield Http(d)


@pytest.mark.parametrize("path", ["/v1/score", "/v1/rerank", "/v2/rerank", "/rerank"])
def test_the_server_agrees_with_the_spec(api, path):
    answer = validator(response_schema(path))
    cases = bodies(path, n_pairs=150)
    assert sum(valid for _, valid in cases) > 20 and sum(not v for _, v in cases) > 20
    disagreements = []
    for body, valid in cases:
        status, _, got = api.post(path, body)
        if status >= 500:
            disagreements.append((body, valid, status, got))
        elif valid and status == 200:
            errors = [e.message for e in answer.iter_errors(got)]
            if errors:
                disagreements.append((body, valid, status, errors))
        elif valid:
            if http_error(got)[0] not in BEYOND_THE_SCHEMA:
                disagreements.append((body, valid, status, got))
        elif status < 400:
            disagreements.append((body, valid, status, got))
    assert not disagreements, \
        f"{len(disagreements)} of {len(cases)}: " + "\n".join(map(repr, disagreements[:10]))
