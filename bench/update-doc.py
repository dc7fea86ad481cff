#!/usr/bin/python3
"""update-doc.py — the generated blocks of docs/benchmarks.md: each benchmark
part of `make bench` owns the text between its markers

    <!-- bench:PART -->
    ...
    <!-- /bench:PART -->

(each marker alone on its line) and nothing else of the file.

    update-doc.py DOC PART FILE     replaces PART's block in DOC with FILE
    update-doc.py --check DOC PART...   checks that each PART has one block

A missing, repeated or out-of-order marker is refused with a message naming
it and the exit status 1, and DOC is left as it was: a block written into the
wrong place would overwrite prose. The new file replaces DOC in one rename,
so an interrupted run leaves the old DOC or the new one, never half of it.
"""
import os
import re
import sys
import tempfile

PART_NAME = re.compile(r"[a-z0-9_]+\Z")
ANY_MARKER = re.compile(r"<!-- /?bench:[^ ]* -->\Z")


class DocError(Exception):
    pass


def markers(part):
    return f"<!-- bench:{part} -->", f"<!-- /bench:{part} -->"


def find_block(lines, doc, part):
    """The indices of PART's opening and closing marker lines."""
    if not PART_NAME.match(part):
        raise DocError(f"{part!r} is not a part name (lower-case letters, digits, _)")
    found = []
    for marker in markers(part):
        at = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == marker]
        if not at:
            raise DocError(f"{doc}: no line {marker}")
        if len(at) > 1:
            lines_at = ", ".join(str(i + 1) for i in at)
            raise DocError(f"{doc}: {marker} on {len(at)} lines ({lines_at}); one expected")
        found.append(at[0])
    begin, end = found
    if end < begin:
        raise DocError(
            f"{doc}: {markers(part)[1]} (line {end + 1}) comes before "
            f"{markers(part)[0]} (line {begin + 1})"
        )
    return begin, end


def read_lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().splitlines(keepends=True)


def replace(doc, part, block_file):
    lines = read_lines(doc)
    begin, end = find_block(lines, doc, part)
    with open(block_file, encoding="utf-8", newline="") as f:
        block = f.read()
    if not block.strip():
        raise DocError(f"{block_file} is empty: {part}'s block is left as it was")
    for line in block.splitlines():
        if ANY_MARKER.match(line):
            raise DocError(f"{block_file} holds a block marker: {line}")
    if not block.endswith("\n"):
        block += "\n"
    text = "".join(lines[: begin + 1]) + block + "".join(lines[end:])
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(doc)), prefix=".update-doc.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, os.stat(doc).st_mode & 0o7777)
        os.replace(tmp, doc)
    except BaseException:
        os.unlink(tmp)
        raise


def check(doc, parts):
    lines = read_lines(doc)
    problems = []
    for part in parts:
        try:
            find_block(lines, doc, part)
        except DocError as e:
            problems.append(str(e))
    if problems:
        raise DocError("\n".join(problems))


def main(argv):
    try:
        if len(argv) >= 3 and argv[1] == "--check":
            check(argv[2], argv[3:])
        elif len(argv) == 4 and not argv[1].startswith("-"):
            replace(argv[1], argv[2], argv[3])
        else:
            print(
                "usage: update-doc.py DOC PART FILE | update-doc.py --check DOC PART...",
                file=sys.stderr,
            )
            return 2
    except (DocError, OSError, UnicodeDecodeError) as e:
        print(f"update-doc.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
