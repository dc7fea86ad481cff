#!/usr/bin/env python3
"""check_includes.py — the include rules of the tree (docs/architecture.md).

1. The engine's layers include only what is below them:
       include   (lmscore.h: the C library only)
       core      include
       model     core, include
       tokenizer model, core, include
       compute   model, core, include
       score     compute, tokenizer, model, core, include
   tokenizer and compute are side by side: neither includes the other.
2. service/, tools/ and clients/ include no engine header but lmscore.h.
3. No include cycle among the project's own headers.
4. A quoted include names exactly one project file, so that the rules above
   judge the header the compiler reads.

Usage: check_includes.py [ROOT]   (ROOT: the source tree; default: this
checkout). Prints each violation and exits 1 when there is one.
  check_includes.py --self-test   checks that each rule catches a violation.
"""
import os
import re
import sys
import tempfile

LAYERS = {
    "include": set(),
    "core": {"include"},
    "model": {"core", "include"},
    "tokenizer": {"model", "core", "include"},
    "compute": {"model", "core", "include"},
    "score": {"compute", "tokenizer", "model", "core", "include"},
}
PUBLIC_ONLY = ("service", "tools", "clients")
SKIPPED = {".git", "build", "build-test", "node_modules", "third_party"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def c_files(root, top):
    base = os.path.join(root, top)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED and not d.startswith("build"))
        for name in sorted(filenames):
            if name.endswith((".c", ".h")):
                yield os.path.join(dirpath, name)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return INCLUDE.findall(f.read())


def engine_headers(root):
    """basename -> [paths] of the headers in the engine's layer folders."""
    found = {}
    for layer in LAYERS:
        d = os.path.join(root, "engine", layer)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".h"):
                found.setdefault(name, []).append(os.path.join(d, name))
    return found


def layer_of(root, path):
    rel = os.path.relpath(path, os.path.join(root, "engine")).split(os.sep)
    return rel[0] if len(rel) == 2 and rel[0] in LAYERS else None


def resolve(path, name, headers):
    """The file a quoted include reads: next to the includer first, then the
    engine's folders (what lmscore_engine_internal puts on the path)."""
    local = os.path.normpath(os.path.join(os.path.dirname(path), name))
    if os.path.isfile(local):
        return [local]
    return headers.get(name, [])


def check(root):
    problems = []
    headers = engine_headers(root)
    for name, paths in headers.items():
        if len(paths) > 1:
            problems.append(f"engine: {name} exists in more than one layer: {paths}")

    graph = {}
    for top in ("engine",) + PUBLIC_ONLY + ("bench", "tests"):
        for path in c_files(root, top):
            rel = os.path.relpath(path, root)
            for name in includes(path):
                targets = resolve(path, name, headers)
                if not targets:
                    continue  # generated (protoc) or a system header spelt with quotes
                target = targets[0]
                trel = os.path.relpath(target, root)
                graph.setdefault(rel, set()).add(trel)
                if top == "engine":
                    src, dst = layer_of(root, path), layer_of(root, target)
                    if src is None or dst is None:
                        problems.append(f"{rel}: includes \"{name}\" ({trel}) outside the layer folders")
                    elif dst != src and dst not in LAYERS[src]:
                        problems.append(f"{rel}: layer {src} includes {trel} (layer {dst})")
                elif top in PUBLIC_ONLY and trel.startswith("engine" + os.sep):
                    if trel != os.path.join("engine", "include", "lmscore.h"):
                        problems.append(f"{rel}: includes the engine-private {trel}; use lmscore.h")

    # Cycles: depth-first search over the include graph.
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append("include cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return problems


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def self_test():
    """Each rule, broken once in a scratch tree, must be reported."""
    cases = {
        "upward": {"engine/core/a.h": '#include "s.h"\n', "engine/score/s.h": ""},
        "sideways": {"engine/compute/c.h": '#include "t.h"\n', "engine/tokenizer/t.h": ""},
        "private": {"service/x.c": '#include "a.h"\n', "engine/core/a.h": ""},
        "cycle": {"engine/model/m.h": '#include "n.h"\n', "engine/model/n.h": '#include "m.h"\n'},
        "duplicate": {"engine/core/d.h": "", "engine/model/d.h": ""},
    }
    clean = {"engine/include/lmscore.h": "", "engine/core/a.h": '#include "lmscore.h"\n',
             "engine/score/s.h": '#include "a.h"\n', "service/x.c": '#include "lmscore.h"\n'}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for label, files in list(cases.items()) + [("clean", clean)]:
            root = os.path.join(tmp, label)
            for rel, text in files.items():
                write(root, rel, text)
            found = check(root)
            if (label == "clean") == bool(found):
                print(f"self-test {label}: expected {'none' if label == 'clean' else 'a violation'},"
                      f" got {found}")
                failed = True
    print("self-test: " + ("FAILED" if failed else "every rule reports its violation"))
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    print(f"{len(problems)} include rule violation(s)" if problems else "include rules hold")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
