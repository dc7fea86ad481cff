"""conftest.py — shared fixtures of the reference suites: where the build is,
which models it made, how to call the engine's CLI, and the per-model numbers
the gate measured (printed at the end of the run)."""

import functools
import json
import os
import subprocess

import pytest

# numpy's BLAS runs single-threaded in this process: the matrices are tiny and
# on a busy machine (ctest -j, fuzzers) a spinning thread pool is many times
# slower. The engine gets one OpenMP thread too unless OMP_NUM_THREADS is set
# by the caller (set it to run the gate multi-threaded).
ENGINE_ENV = {"OMP_NUM_THREADS": "1", **os.environ}
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[_var] = "1"

import ref_model  # noqa: E402  (after the thread settings, which numpy reads at import)

# The three architectures in both formats must exist: a missing one is a
# failure of the build, not a reason to skip.
CORE_MODELS = ("tiny-qwen3.gguf", "tiny-qwen3-hf", "tiny-llama.gguf", "tiny-llama-hf",
               "tiny-qwen2.gguf", "tiny-qwen2-hf")
ENGINE_TIMEOUT_S = 600

MEASURED = {}  # model name -> {"max_abs_dlogprob": ..., ...}, filled by the gate


def build_dir():
    return os.environ.get("LMSCORE_BUILD_DIR")


def models_dir():
    return os.path.join(build_dir(), "models") if build_dir() else None


def discover_models():
    """Every tiny model the build made: tiny-*.gguf files and tiny-* Hugging
    Face directories (with a config.json). Larger presets are benchmark
    models, too slow for a float64 reference."""
    d = models_dir()
    if not d or not os.path.isdir(d):
        return []
    found = []
    for name in sorted(os.listdir(d)):
        path = os.path.join(d, name)
        if not name.startswith("tiny-"):
            continue
        if name.endswith(".gguf") and os.path.isfile(path):
            found.append(name)
        elif os.path.isfile(os.path.join(path, "config.json")):
            found.append(name)
    return found


def model_path(name):
    return os.path.join(models_dir(), name)


def preset_of(name):
    """tiny-qwen3.gguf and tiny-qwen3-hf are the preset tiny-qwen3."""
    return name[: -len(".gguf")] if name.endswith(".gguf") else name[: -len("-hf")]


def gguf_hf_pairs():
    found = set(discover_models())
    return [(n, preset_of(n) + "-hf") for n in sorted(found)
            if n.endswith(".gguf") and preset_of(n) + "-hf" in found]


@functools.lru_cache(maxsize=4)
def reference_model(name):
    return ref_model.load_model(model_path(name))


def engine_cli():
    return os.path.join(build_dir(), "tools", "lmscore-local")


def run_engine(name, request, extra_args=()):
    """(exit code, parsed stdout JSON, stderr) of lmscore-local on a request,
    in f32 arithmetic (the reference's; the other precisions have their own
    gates, tests/unit/test_precision.c)."""
    cmd = [engine_cli(), "--model", model_path(name), "--request", "-", "--precision", "f32",
           *extra_args]
    proc = subprocess.run(cmd, input=json.dumps(request), capture_output=True, text=True,
                          timeout=ENGINE_TIMEOUT_S, check=False, env=ENGINE_ENV)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out = None
    return proc.returncode, out, proc.stderr


def score_with_engine(name, request):
    code, out, err = run_engine(name, request)
    assert code == 0 and out is not None, f"{name}: exit {code}\nstdout JSON: {out}\n{err}"
    return out


@pytest.fixture(scope="session")
def engine_ready():
    if not build_dir():
        pytest.fail("LMSCORE_BUILD_DIR is not set (run through ctest, or export it)")
    if not os.access(engine_cli(), os.X_OK):
        pytest.fail(f"engine CLI not built: {engine_cli()}")


def pytest_terminal_summary(terminalreporter):
    if not MEASURED:
        return
    terminalreporter.write_sep("-", "engine vs numpy reference: max |Δ logprob| per model")
    for name, m in sorted(MEASURED.items()):
        terminalreporter.write_line(
            f"{name:32s} max|Δlp| {m['max_abs_dlogprob']:.3e}  "
            f"({m['sequences']} sequences, {m['labels']} labels, "
            f"{m['tokens']} tokens, lengths {m['min_len']}..{m['max_len']})")
