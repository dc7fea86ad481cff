#!/usr/bin/python3
"""gen_stubs.py OUTDIR — builds the importable `lmscore` package into
OUTDIR: the client sources plus the message and service stubs generated from
protos/ with protoc (--python_out) and grpc_python_plugin (--grpc_python_out).
The CMake target python-client runs it; setup.py (pip install, python3 -m
build) calls generate() for the stubs alone.

The standard protos are generated under lmscore/_pb/ rather than at their
own paths: a generated grpc/health/v1/ would collide with the grpcio package
`grpc`, and google/rpc/ is not packaged by Debian. Their proto packages (and
so the wire names, e.g. /grpc.health.v1.Health/Check) are unchanged.

python3-grpc-tools is not used: Debian's (1.14) bundles a protoc whose
output the installed protobuf runtime (3.21) refuses to load."""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOS = os.path.join(HERE, "..", "..", "protos")
GRPC_PLUGIN = "/usr/bin/grpc_python_plugin"

# proto under protos/ -> where it is generated from (its module path)
LAYOUT = {
    "lmscore/v1/score.proto": "lmscore/v1/score.proto",
    "grpc/health/v1/health.proto": "lmscore/_pb/health.proto",
    "google/rpc/status.proto": "lmscore/_pb/status.proto",
    "google/rpc/error_details.proto": "lmscore/_pb/error_details.proto",
}
WITH_SERVICES = {"lmscore/v1/score.proto", "lmscore/_pb/health.proto"}


def generate(outdir, protos=PROTOS):
    """Writes the stub modules (lmscore/v1/, lmscore/_pb/) under outdir."""
    with tempfile.TemporaryDirectory() as staging:
        for src, dst in LAYOUT.items():
            os.makedirs(os.path.dirname(os.path.join(staging, dst)), exist_ok=True)
            shutil.copy(os.path.join(protos, src), os.path.join(staging, dst))
        for dst in LAYOUT.values():
            args = ["protoc", f"-I{staging}", f"-I{protos}", f"--python_out={outdir}"]
            if dst in WITH_SERVICES:
                args += [f"--plugin=protoc-gen-grpc_python={GRPC_PLUGIN}",
                         f"--grpc_python_out={outdir}"]
            subprocess.run(args + [dst], check=True)
    for sub in ("v1", "_pb"):
        open(os.path.join(outdir, "lmscore", sub, "__init__.py"), "a").close()


def main(outdir):
    package = os.path.join(outdir, "lmscore")
    shutil.rmtree(package, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "lmscore"), package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    generate(outdir)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_stubs.py OUTDIR")
    main(sys.argv[1])
