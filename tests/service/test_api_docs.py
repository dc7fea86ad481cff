"""The curl lines of docs/api.md and the README run as written against the
demo model (with the daemon's HTTP port in place of :8080), and answer what
the docs show: every member of a ```json block that follows a curl block is
in the answer with the same value (scores within float32 rounding of another
CPU's kernels); members the docs leave out (created, timing) are not
compared.
"""
import json
import math
import os
import re
import shlex
import subprocess

import pytest

from harness import Daemon, Http

SOURCE = os.environ["LMSCORE_SOURCE_DIR"]
DOC_PORT = "127.0.0.1:8080"


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


def same(shown, got, where="answer"):
    if isinstance(shown, dict):
        assert isinstance(got, dict), where
        for key, value in shown.items():
            assert key in got, f"{where}.{key} is missing"
            same(value, got[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(got, list) and len(got) == len(shown), where
        for k, (a, b) in enumerate(zip(shown, got)):
            same(a, b, f"{where}[{k}]")
    elif isinstance(shown, float):
        assert math.isclose(shown, got, rel_tol=1e-4, abs_tol=1e-30), (where, shown, got)
    else:
        assert shown == got, (where, shown, got)


@pytest.fixture(scope="module")
def port():
    with Daemon("--http-listen", "127.0.0.1:0") as d:
        yield Http(d).port


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
    if shown is not None:
        same(shown, got)
    elif doc == "README.md":
        assert len(got["scores"]) == 2 and all(len(row) == 2 for row in got["scores"]), got
