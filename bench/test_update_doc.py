#!/usr/bin/python3
"""test_update_doc.py SOURCE_DIR — ctest bench.update_doc: the block
mechanism of `make bench` (bench/update-doc.py).

Asserts that
1. replacing a block changes exactly the lines between its markers, and every
   other byte of the file (CRLF lines, a file without a final newline, the
   neighbouring blocks) stays as it was;
2. a missing, repeated or out-of-order marker, an empty result file and a
   result file holding a marker are refused with exit status 1, a message
   naming the problem, and the file unchanged;
3. bench/machine.sh, which the parts write their blocks with: bench_block
   writes the head line (machine, tier, threads, load, command) and then the
   tables to BENCH_RESULTS/PART.md, and bench_tee keeps a failing command's
   status under set -e (a failed part must not write a block);
4. every part `bench/engine/run-all.sh --parts` lists has a bench/PART/run.sh
   and exactly one block in docs/benchmarks.md, and the doc has no block of
   a part make bench does not run.
Prints each failure and exits 1 when there is one.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
UPDATE = os.path.join(HERE, "update-doc.py")
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([sys.executable, UPDATE, *args], capture_output=True, text=True)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_replace(tmp):
    doc, block = os.path.join(tmp, "doc.md"), os.path.join(tmp, "block.md")
    before = (
        b"# Title\r\n\r\nprose about matmul\r\n<!-- bench:matmul -->\r\nold table\r\n"
        b"<!-- /bench:matmul -->\r\nbetween\n<!-- bench:lm_head -->\nkeep\n"
        b"<!-- /bench:lm_head -->\nlast line, no newline"
    )
    write(doc, before)
    write(block, b"**Machine:** x\n\n| a |\n| --- |\n| 1 |")
    r = run(doc, "matmul", block)
    expect(r.returncode == 0, f"replace: exit {r.returncode}, {r.stderr!r}")
    expected = before.replace(b"old table\r\n", b"**Machine:** x\n\n| a |\n| --- |\n| 1 |\n")
    expect(read(doc) == expected, f"replace: got {read(doc)!r}")
    # Replacing again with the same file changes nothing: the block is the file.
    run(doc, "matmul", block)
    expect(read(doc) == expected, "replace twice: the second replacement changed the file")
    # An empty block between adjacent markers is filled.
    write(doc, b"a\n<!-- bench:peer -->\n<!-- /bench:peer -->\nb\n")
    r = run(doc, "peer", block)
    expect(
        r.returncode == 0 and read(doc) == b"a\n<!-- bench:peer -->\n**Machine:** x\n\n| a |\n"
        b"| --- |\n| 1 |\n<!-- /bench:peer -->\nb\n",
        f"empty block: exit {r.returncode}, {read(doc)!r}",
    )


def test_refusals(tmp):
    doc, block = os.path.join(tmp, "doc.md"), os.path.join(tmp, "block.md")
    write(block, b"new\n")
    cases = [
        ("no opening marker", b"x\n<!-- /bench:matmul -->\n", "no line <!-- bench:matmul -->"),
        ("no closing marker", b"<!-- bench:matmul -->\nx\n", "no line <!-- /bench:matmul -->"),
        (
            "a repeated opening marker",
            b"<!-- bench:matmul -->\n<!-- /bench:matmul -->\n<!-- bench:matmul -->\n",
            "<!-- bench:matmul --> on 2 lines (1, 3); one expected",
        ),
        (
            "a repeated closing marker",
            b"<!-- bench:matmul -->\n<!-- /bench:matmul -->\n<!-- /bench:matmul -->\n",
            "<!-- /bench:matmul --> on 2 lines (2, 3); one expected",
        ),
        (
            "markers out of order",
            b"<!-- /bench:matmul -->\nx\n<!-- bench:matmul -->\n",
            "<!-- /bench:matmul --> (line 1) comes before <!-- bench:matmul --> (line 3)",
        ),
        (
            "another part's marker only",
            b"<!-- bench:matmul_x -->\n<!-- /bench:matmul_x -->\n",
            "no line <!-- bench:matmul -->",
        ),
    ]
    for what, text, message in cases:
        write(doc, text)
        r = run(doc, "matmul", block)
        expect(r.returncode == 1, f"{what}: exit {r.returncode}, expected 1")
        expect(message in r.stderr, f"{what}: stderr {r.stderr!r} lacks {message!r}")
        expect(read(doc) == text, f"{what}: the file changed")
    good = b"<!-- bench:matmul -->\nold\n<!-- /bench:matmul -->\n"
    for what, content, message in [
        ("an empty result", b" \n", "is empty"),
        ("a result holding a marker", b"x\n<!-- /bench:lm_head -->\n", "holds a block marker"),
    ]:
        write(doc, good)
        write(block, content)
        r = run(doc, "matmul", block)
        expect(r.returncode == 1 and message in r.stderr, f"{what}: {r.returncode}, {r.stderr!r}")
        expect(read(doc) == good, f"{what}: the file changed")
    r = run(doc, "matmul", os.path.join(tmp, "missing.md"))
    expect(r.returncode == 1 and "missing.md" in r.stderr, f"a missing result: {r.stderr!r}")
    expect(read(doc) == good, "a missing result: the file changed")
    r = run(doc, "Mat mul", block)
    expect(r.returncode == 1 and "not a part name" in r.stderr, f"a bad name: {r.stderr!r}")
    r = run("--check", doc, "matmul", "peer")
    expect(
        r.returncode == 1 and "no line <!-- bench:peer -->" in r.stderr,
        f"--check of a missing block: {r.returncode}, {r.stderr!r}",
    )
    r = run("--check", doc, "matmul")
    expect(r.returncode == 0, f"--check of a present block: {r.returncode}, {r.stderr!r}")
    leftovers = [n for n in os.listdir(tmp) if n.startswith(".update-doc.")]
    expect(not leftovers, f"temporary files left: {leftovers}")


TUNING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS")


def test_machine(src, tmp):
    script = os.path.join(src, "bench", "engine", "run.sh")  # $0: machine.sh finds the tree by it
    # the test's own environment: the tuning variables the head line names
    # are set or unset here, whatever the machine's environment says
    base = {k: v for k, v in os.environ.items() if k not in TUNING}
    env = dict(base, BENCH_RESULTS=tmp, OMP_NUM_THREADS="1")

    def sh(code):
        return subprocess.run(["sh", "-c", f'set -eu; . "{src}/bench/machine.sh"; {code}', script],
                              capture_output=True, text=True, env=env)

    # The command follows the tuning variables set, in machine.sh's order.
    for tuning, prefix in [
        ({"OMP_NUM_THREADS": "1"}, "OMP_NUM_THREADS=1"),
        ({"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512", "OMP_NUM_THREADS": "1"},
         "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 OMP_NUM_THREADS=1"),
        ({}, ""),
    ]:
        env = dict(base, BENCH_RESULTS=tmp, **tuning)
        r = sh('printf "| t |\\n" | bench_block demo BUILD "tier x" "3 threads" "sh run.sh build"')
        expect(r.returncode == 0, f"bench_block: exit {r.returncode}, {r.stderr!r}")
        with open(os.path.join(tmp, "demo.md"), encoding="utf-8") as f:
            lines = f.read().split("\n")
        command = (prefix + " " if prefix else "") + "sh run.sh build"
        expect(
            re.fullmatch(r"\*\*Machine:\*\* .+ \(\d+ CPUs\), compute tier tier x, 3 threads; "
                         r"load average [0-9. ]+ \(1/5/15 min\) at the start\. "
                         r"\*\*Command:\*\* `" + re.escape(command) + "`", lines[0]) is not None,
            f"bench_block with {tuning}: head line {lines[0]!r}",
        )
        expect(lines[1:] == ["", "| t |", ""], f"bench_block: body {lines[1:]!r}")
    env = dict(base, BENCH_RESULTS=tmp, OMP_NUM_THREADS="1")
    out = os.path.join(tmp, "tee.txt")
    r = sh(f'bench_tee "{out}" sh -c "echo kept; exit 3"; echo not reached')
    expect(r.returncode == 3 and "not reached" not in r.stdout,
           f"bench_tee of a failing command: exit {r.returncode}, {r.stdout!r}")
    expect(read(out) == b"kept\n", f"bench_tee: {out} holds {read(out)!r}")


def test_doc(src):
    parts = subprocess.run(
        ["sh", os.path.join(src, "bench", "engine", "run-all.sh"), "--parts"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    expect(len(parts) > 1, f"run-all.sh --parts printed {parts}")
    for part in parts:
        expect(
            os.path.isfile(os.path.join(src, "bench", part, "run.sh")),
            f"part {part}: bench/{part}/run.sh is missing",
        )
    doc = os.path.join(src, "docs", "benchmarks.md")
    r = run("--check", doc, *parts)
    expect(r.returncode == 0, f"docs/benchmarks.md: {r.stderr.strip()}")
    with open(doc, encoding="utf-8") as f:
        named = set(re.findall(r"^<!-- /?bench:([^ ]*) -->$", f.read(), re.M))
    expect(named <= set(parts), f"docs/benchmarks.md has blocks of no part: {named - set(parts)}")


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(HERE)
    with tempfile.TemporaryDirectory() as tmp:
        test_replace(tmp)
        test_refusals(tmp)
    with tempfile.TemporaryDirectory() as tmp:
        test_machine(os.path.abspath(src), tmp)
    test_doc(src)
    print("%d failure%s" % (len(failures), "" if len(failures) == 1 else "s"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
