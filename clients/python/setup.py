"""setup.py — the parts of the lmscore package build that pyproject.toml
cannot declare: the version, read from the project's CMakeLists.txt, and the
stubs, generated from protos/ into the build tree by gen_stubs.generate().
From a source checkout both come from the tree around clients/python; an
sdist carries copies (protos/ and the version file) so that a wheel built
from it needs nothing outside it."""

import os
import re
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_stubs  # noqa: E402

TREE = os.path.join(HERE, "..", "..")
VERSION_FILE = "LMSCORE_VERSION"
SDIST_PROTOS = "protos"
# what the generated protos import
IMPORTED_PROTOS = ["google/protobuf/duration.proto", "google/protobuf/any.proto"]


def protos():
    own = os.path.join(HERE, SDIST_PROTOS)
    return own if os.path.isdir(own) else os.path.join(TREE, "protos")


def version():
    own = os.path.join(HERE, VERSION_FILE)
    if os.path.exists(own):
        with open(own, encoding="utf-8") as f:
            return f.read().strip()
    with open(os.path.join(TREE, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(lmscore VERSION ([0-9.]+)", f.read())
    if not match:
        sys.exit("setup.py: no `project(lmscore VERSION ...)` in CMakeLists.txt")
    return match.group(1)


class build_py_with_stubs(build_py):
    def run(self):
        super().run()
        if not self.dry_run:
            gen_stubs.generate(self.build_lib, protos())


class sdist_with_protos(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        for src in list(gen_stubs.LAYOUT) + IMPORTED_PROTOS:
            dst = os.path.join(base_dir, SDIST_PROTOS, src)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(os.path.join(protos(), src), dst)
        shutil.copy(os.path.join(HERE, "gen_stubs.py"), base_dir)
        with open(os.path.join(base_dir, VERSION_FILE), "w", encoding="utf-8") as f:
            f.write(version() + "\n")


setup(version=version(), cmdclass={"build_py": build_py_with_stubs, "sdist": sdist_with_protos})
