"""test_docs.py — docs/clients.md's `lmscore` commands, run as written (the
daemon reached through $LMSCORE_TARGET, since the page relies on the
default target) against a real lmscored serving the demo model, and their
output compared with what the page shows:

- a command in a ```sh block followed at once by a plain ``` block prints
  that block (stdout, then stderr);
- a `$ command` line prints the lines after it, up to the next `$` line;
- any other command must succeed.

Numbers are compared within a relative 1e-4 (scores differ in their last
bits between kernel tiers), except timings (a number before " ms", or
anything `bench` prints), which only have to be numbers. The Python
snippet's `r.scores` must round to the values its comment shows."""

import ast
import math
import os
import re
import subprocess
import sys

import pytest

from daemon import Daemon, build_dir, cli_path

SOURCE = os.environ["LMSCORE_SOURCE_DIR"]
DOC = os.path.join(SOURCE, "docs", "clients.md")
DOC_TARGET = "127.0.0.1:50051"
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# what the page's commands read from the working directory
INPUT_FILES = {"products.txt": " trail runner\n road racer\n hiking boot\n"}


def read_doc():
    with open(DOC, encoding="utf-8") as f:
        return f.read()


def documented_examples(text):
    """[(command, expected output or None)] of the page's lmscore commands."""
    examples = []
    for match in re.finditer(r"```sh\n(.*?)```\n(?:\s*```\n(.*?)```\n)?", text, re.S):
        block, output = match.group(1), match.group(2)
        lines = re.sub(r"\\\n\s*", " ", block).splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            i += 1
            prompt = line.startswith("$ ")
            command = re.sub(r"\s+#.*$", "", line[2:] if prompt else line).strip()
            if not re.match(r"^(\S.*\|\s*)?lmscore\s", command):
                continue
            expected = None
            if prompt:
                shown = []
                while i < len(lines) and not lines[i].startswith("$ "):
                    shown.append(lines[i])
                    i += 1
                expected = "\n".join(shown)
            elif output is not None and len(lines) == 1:
                expected = output.rstrip("\n")
            examples.append((command, expected))
    return examples


def tokens(text):
    """text split into numbers and the text between them."""
    parts, at = [], 0
    for m in NUMBER.finditer(text):
        parts.append(text[at:m.start()])
        parts.append(float(m.group()))
        at = m.end()
    parts.append(text[at:])
    return parts


def differences(shown, got, free_numbers):
    """Where got differs from shown: text exactly, numbers as the module
    docstring says. [] when they agree."""
    a, b = tokens(shown), tokens(got)
    if len(a) != len(b):
        return [f"shown:\n{shown}\ngot:\n{got}"]
    found = []
    for k, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                found.append(f"the page shows {x!r}, printed {y!r}")
            continue
        timing = k + 1 < len(a) and a[k + 1].startswith(" ms")
        if not (free_numbers or timing or math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-12)):
            found.append(f"{x} shown, {y} printed")
    return found


@pytest.fixture(scope="module")
def daemon():
    d = Daemon(model="tiny-qwen3.gguf")
    yield d
    d.stop()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("doc-examples")
    for name, content in INPUT_FILES.items():
        (path / name).write_text(content)
    # the page's `lmscore` is the built CLI
    os.symlink(cli_path(), path / "lmscore")
    return path


def run(command, daemon, workdir):
    env = {**os.environ, "LMSCORE_TARGET": daemon.target,
           "PATH": f"{workdir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=300,
                          cwd=workdir, env=env)


def test_the_page_has_examples_with_output():
    examples = documented_examples(read_doc())
    assert len(examples) >= 10, examples
    assert sum(expected is not None for _, expected in examples) >= 5, examples


@pytest.mark.parametrize("command,expected", documented_examples(read_doc()))
def test_example(daemon, workdir, command, expected):
    result = run(command, daemon, workdir)
    if expected is None:
        assert result.returncode == 0, f"{command}: {result.stdout}{result.stderr}"
        return
    got = (result.stdout + result.stderr).rstrip("\n")
    wrong = differences(expected, got, free_numbers=command.startswith("lmscore bench"))
    assert not wrong, f"{command}:\n" + "\n".join(wrong)


def test_the_checker_catches_a_missing_part():
    shown = "algorithm: serial (x); 14 prompt tokens"
    assert differences(shown, shown + "; server: 0.1 ms queued", False)
    assert differences("0\t6.79e-08", "0\t6.80e-08", False)
    assert not differences("took 1.5 ms", "took 9.25 ms", False)
    assert not differences("0\t6.7944427e-08", "0\t6.79444e-08", False)


def python_snippet(text):
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    return code


def test_the_python_snippet(daemon, workdir):
    code = python_snippet(read_doc())
    (comment,) = re.findall(r"r\.scores\s+#\s*(\[\[.*?\]\])", code)
    shown = [NUMBER.findall(row) for row in re.findall(r"\[([^\[\]]*)\]", comment)]
    (workdir / "items.txt").write_text(" Yes.\n No.\n")
    # the snippet, then its scores printed from inside its `with` block
    program = code.replace(DOC_TARGET, daemon.target) + "\n    print(repr(r.scores))\n"
    env = {**os.environ, "PYTHONPATH": os.path.join(build_dir(), "clients", "python")}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=300, cwd=workdir, env=env)
    assert result.returncode == 0, result.stderr
    scores = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    for row_shown, row_got in zip(shown, scores, strict=True):
        for x, y in zip(row_shown, row_got, strict=True):
            assert round(y, len(x.split(".")[1])) == float(x), (comment, scores)
