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
3. The daemon's folders (service/) include only what is below them:
       base      (nothing of the daemon's)
       transport base
       core      transport, base
       api       core, transport, base
       ops       core, transport, base
   main.c and its steps (load.c, drain.c, daemon.h), the only files
   outside them, include any. Each folder has a main
   header, <folder>.h, opening with a comment that says what it owns. In
   api/ a door's handlers include no other door's: no http_* file includes
   an rpc_* header, and no rpc_* file an http_* one.
4. No include cycle among the project's own headers.
5. A quoted include names exactly one project file, so that the rules above
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
SERVICE_LAYERS = {
    "base": set(),
    "transport": {"base"},
    "core": {"transport", "base"},
    "api": {"core", "transport", "base"},
    "ops": {"core", "transport", "base"},
}
SERVICE_ROOT_FILES = {"main.c", "load.c", "drain.c", "daemon.h"}
DOORS = ("http_", "rpc_")
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


def layer_headers(root, top, layers):
    """basename -> [paths] of the headers in top's layer folders."""
    found = {}
    for layer in layers:
        d = os.path.join(root, top, layer)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".h"):
                found.setdefault(name, []).append(os.path.join(d, name))
    return found


def layer_of(root, path, top="engine", layers=LAYERS):
    rel = os.path.relpath(path, os.path.join(root, top)).split(os.sep)
    return rel[0] if len(rel) == 2 and rel[0] in layers else None


def resolve(path, name, *header_maps):
    """The file a quoted include reads: next to the includer first, then the
    layer folders (what lmscore_engine_internal and lmscored_objects put on
    the path), in the order given."""
    local = os.path.normpath(os.path.join(os.path.dirname(path), name))
    if os.path.isfile(local):
        return [local]
    for headers in header_maps:
        if name in headers:
            return headers[name]
    return []


def door_of(path):
    base = os.path.basename(path)
    return next((d for d in DOORS if base.startswith(d)), None)


def check_service_file(root, path, target, name, problems):
    """Rule 3 for one include of a file under service/."""
    rel, trel = os.path.relpath(path, root), os.path.relpath(target, root)
    src = layer_of(root, path, "service", SERVICE_LAYERS)
    if src is None or not trel.startswith("service" + os.sep):
        return
    dst = layer_of(root, target, "service", SERVICE_LAYERS)
    if dst is None:
        problems.append(f"{rel}: includes \"{name}\" ({trel}) outside the layer folders")
    elif dst != src and dst not in SERVICE_LAYERS[src]:
        problems.append(f"{rel}: service folder {src} includes {trel} (folder {dst})")
    elif door_of(path) and door_of(target) and door_of(path) != door_of(target):
        problems.append(f"{rel}: a {door_of(path)}* handler includes another door's {trel}")


def check_main_headers(root, problems):
    """Each service folder's <folder>.h exists and opens with a comment."""
    for layer in SERVICE_LAYERS:
        d = os.path.join(root, "service", layer)
        if not os.path.isdir(d):
            continue
        main = os.path.join(d, layer + ".h")
        text = open(main, encoding="utf-8").read() if os.path.isfile(main) else ""
        if not text.startswith("/*") or f"{layer}/ — " not in text.split("*/", 1)[0]:
            problems.append(f"service/{layer}: no main header {layer}.h opening with a comment "
                            f"\"{layer}/ — what it owns\"")


def check(root):
    problems = []
    headers = layer_headers(root, "engine", LAYERS)
    service = layer_headers(root, "service", SERVICE_LAYERS)
    for top, found in (("engine", headers), ("service", service)):
        for name, paths in found.items():
            if len(paths) > 1:
                problems.append(f"{top}: {name} exists in more than one layer: {paths}")
    check_main_headers(root, problems)

    graph = {}
    for top in ("engine",) + PUBLIC_ONLY + ("bench", "tests"):
        for path in c_files(root, top):
            rel = os.path.relpath(path, root)
            if top == "service" and layer_of(root, path, "service", SERVICE_LAYERS) is None:
                if os.path.relpath(path, os.path.join(root, "service")) not in SERVICE_ROOT_FILES:
                    problems.append(f"{rel}: outside the service's layer folders")
            for name in includes(path):
                maps = (service, headers) if top == "service" else (headers, service)
                targets = resolve(path, name, *maps)
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
                if top == "service":
                    check_service_file(root, path, target, name, problems)

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
        "private": {"service/base/x.c": '#include "a.h"\n', "engine/core/a.h": "",
                    "service/base/base.h": "/* base/ — x */\n"},
        "service_upward": {"service/base/base.h": '/* base/ — x */\n#include "service.h"\n',
                           "service/core/core.h": "/* core/ — x */\n",
                           "service/core/service.h": ""},
        "service_sideways": {"service/ops/ops.h": '/* ops/ — x */\n#include "api.h"\n',
                             "service/api/api.h": "/* api/ — x */\n"},
        "service_door": {"service/api/api.h": "/* api/ — x */\n",
                         "service/api/http_score.c": '#include "rpc_score.h"\n',
                         "service/api/rpc_score.h": ""},
        "service_loose": {"service/loose.c": ""},
        "service_main_header": {"service/core/service.h": ""},
        "cycle": {"engine/model/m.h": '#include "n.h"\n', "engine/model/n.h": '#include "m.h"\n'},
        "duplicate": {"engine/core/d.h": "", "engine/model/d.h": ""},
    }
    clean = {"engine/include/lmscore.h": "", "engine/core/a.h": '#include "lmscore.h"\n',
             "engine/score/s.h": '#include "a.h"\n',
             "service/base/base.h": '/* base/ — x */\n#include "lmscore.h"\n',
             "service/core/core.h": '/* core/ — x */\n#include "base.h"\n',
             "service/api/api.h": '/* api/ — x */\n#include "core.h"\n#include "http_score.h"\n',
             "service/api/http_score.h": '#include "score_call.h"\n',
             "service/core/score_call.h": "",
             "service/main.c": '#include "api.h"\n'}
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
