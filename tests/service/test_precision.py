"""--precision, --kv-cache-dtype and --isa (and LMSCORE_PRECISION, LMSCORE_ISA)
through the real daemon on the f32 demo model: GetModelInfo and
lmscore_build_info say the precision in use, why, the kernels, how attention
holds keys and values, the compute tier and the weight bytes;
scores are what the compute-tier contract promises whatever the host: the
engine's own bits in that precision on the daemon's tier (tools/lmscore-local
with the same --isa), and against the default tier the same bits where the
two tiers compute the same sequence, else within the precision gates; they
stay within a measured distance of f32's; a tier dropped at start-up
(lmscored-test-hooks' LMSCORE_TEST_DROP_AMX) is named, with why, by
GetModelInfo, `lmscore info`, the log and lmscore_build_info; a self-check
that faults (LMSCORE_TEST_SELF_CHECK_SIGNAL) drops its tier and the daemon
serves on the next; with defaults the daemon serves on the CPU's fastest
tier (avx512-bf16 where the CPU has AVX-512 BF16 and no AMX); a bad value
stops the daemon at startup with a precise error.
"""
import os
import re
import statistics
import subprocess

import pytest

from harness import (BUILD, LMSCORED, LMSCORED_TEST_HOOKS, MODEL, Daemon, Http, Metrics,
                     local_score, tokens, value)
from lmscore.v1 import score_pb2, score_pb2_grpc

QUERY = [9707, 11, 1879, 374, 264, 1273, 13, 358, 1075, 2055]
ITEMS = [[358 + 7 * i, 1075, 220 + i][: 1 + i % 3] for i in range(24)] + [[]]
LABELS = [9454, 2753, 13, 220]

# How far each precision's numbers may be from f32's: bf16 and int8 round this
# f32 checkpoint's weights, which moves them far more than their arithmetic
# does (docs/engine.md, "Precision"). f32 is the reference itself.
TOLERANCE = {"f32": {"logprob_max": 1e-5, "logprob_mean": 1e-5, "softmax_max": 1e-5},
             "bf16": {"logprob_max": 0.15, "logprob_mean": 0.05, "softmax_max": 0.04},
             "bf16x2": {"logprob_max": 0.15, "logprob_mean": 0.05, "softmax_max": 0.04},
             "int8": {"logprob_max": 0.4, "logprob_mean": 0.12, "softmax_max": 0.12}}

# Each daemon: how it is told, and what GetModelInfo must then say. Every one
# serves /metrics, whose lmscore_build_info must agree.
METRICS = ["--metrics-listen", "127.0.0.1:0"]
CONFIGS = {
    "f32": dict(args=["--precision", "f32", *METRICS], env={}, precision="f32",
                formats="f32", kernels="f32 ", bytes_per_parameter=4.0),
    "bf16": dict(args=["--precision", "bf16", *METRICS], env={}, precision="bf16",
                 formats="bf16", kernels="16-bit", bytes_per_parameter=2.0),
    "bf16x2": dict(args=["--precision", "bf16x2", *METRICS], env={}, precision="bf16x2",
                   formats="bf16", kernels="16-bit", bytes_per_parameter=2.0),
    "bf16-kv-f32": dict(args=["--precision", "bf16", "--kv-cache-dtype", "f32", *METRICS],
                        env={}, precision="bf16", formats="bf16", kernels="16-bit",
                        bytes_per_parameter=2.0, kv="f32"),
    "bf16-avx2": dict(args=["--precision", "bf16", "--isa", "avx2", *METRICS], env={},
                      precision="bf16", formats="bf16", kernels="16-bit avx2",
                      bytes_per_parameter=2.0),
    "int8-avx2": dict(args=METRICS, env={"LMSCORE_PRECISION": "int8", "LMSCORE_ISA": "avx2"},
                      precision="int8", formats="q8", kernels="int8 avx2",
                      bytes_per_parameter=1.0625),
    "bf16-amx-emulated": dict(args=["--precision", "bf16", "--isa", "amx-emulated", *METRICS],
                              env={}, precision="bf16", formats="bf16",
                              kernels="16-bit amx-emulated", bytes_per_parameter=2.0),
    "int8-amx-emulated": dict(args=["--precision", "int8", "--isa", "amx-emulated", *METRICS],
                              env={}, precision="int8", formats="q8",
                              kernels="int8 amx-emulated", bytes_per_parameter=1.0625),
}

# The compute-tier contract (docs/engine.md, "Compute tiers"): the tiers that
# multiply BF16 weights with bf16 activations compute bf16 and bf16x2 by a
# sequence of their own; every other precision, and both on the vector tiers,
# is one sequence on every tier. Across sequences, results are within the
# gates: bf16x2's on log-probs, bf16's on the scores (with softmax over the
# labels) and on each label's ranking of the items.
BF16_SEQUENCES = {"amx": "tdpbf16ps", "amx-emulated": "tdpbf16ps", "avx512-bf16": "vdpbf16ps"}
GATES = {"logprob_max": 0.02, "logprob_mean": 0.01, "score_max": 0.02, "score_mean": 0.01,
         "spearman": 0.995}


def same_sequence(precision, tier_a, tier_b):
    return (precision not in ("bf16", "bf16x2")
            or BF16_SEQUENCES.get(tier_a) == BF16_SEQUENCES.get(tier_b))


def spearman(a, b):
    """Spearman's correlation of two lists without ties."""
    def ranks(v):
        r = [0] * len(v)
        for place, i in enumerate(sorted(range(len(v)), key=v.__getitem__)):
            r[i] = place
        return r
    ra, rb, n = ranks(a), ranks(b), len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb)) / (n * (n * n - 1))


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        return set(next((line.split(":", 1)[1].split() for line in f
                         if line.startswith("flags")), []))


def x86_64_v3():
    """Whether this CPU has what the 16-bit and int8 kernels need."""
    return {"avx2", "fma", "f16c"} <= cpu_flags()


@pytest.fixture(scope="module", params=[
    name if config["precision"] == "f32" else pytest.param(name, marks=pytest.mark.platform)
    for name, config in CONFIGS.items()])
def served(request):
    """(config name, config, daemon) for each daemon in CONFIGS; those of
    another precision than f32 need x86-64-v3 (the machine mark)."""
    config = CONFIGS[request.param]
    if config["precision"] != "f32" and not x86_64_v3():
        pytest.skip("the CPU lacks AVX2, FMA or F16C: every precision runs as f32")
    with Daemon(*config["args"], env=config["env"]) as d:
        yield request.param, config, d


def info_of(daemon):
    with daemon.channel() as ch:
        return score_pb2_grpc.ScoreServiceStub(ch).GetModelInfo(score_pb2.GetModelInfoRequest(),
                                                                timeout=30)


def score(daemon, apply_softmax):
    req = score_pb2.ScoreRequest(query=tokens(QUERY), items=[tokens(i) for i in ITEMS],
                                 label_token_ids=LABELS, apply_softmax=apply_softmax,
                                 return_logprobs=True)
    with daemon.channel() as ch:
        resp = score_pb2_grpc.ScoreServiceStub(ch).Score(req, timeout=300)
    return [list(i.scores) for i in resp.items], [list(i.logprobs) for i in resp.items]


def local(config, apply_softmax, isa="auto"):
    """(scores, log-probs, tier) of the engine itself on that tier, in the
    config's precision and keys and values."""
    out = local_score({"query": QUERY, "items": ITEMS, "label_token_ids": LABELS,
                       "apply_softmax": apply_softmax}, "--precision", config["precision"],
                      "--kv-cache-dtype", config.get("kv", "auto"), "--isa", isa)
    return out["scores"], out["logprobs"], out["isa"]


@pytest.fixture(scope="module")
def f32_numbers():
    """(label softmax, log-probs) of f32 arithmetic, from the engine itself."""
    return local(CONFIGS["f32"], True)[:2]


def differences(a_rows, b_rows):
    assert len(a_rows) == len(b_rows)
    return [abs(a - b) for ra, rb in zip(a_rows, b_rows) for a, b in zip(ra, rb, strict=True)]


def test_model_info_says_the_precision_why_and_the_kernels(served):
    name, config, daemon = served
    info = info_of(daemon)
    assert info.precision == config["precision"]
    assert info.precision_reason == f"{config['precision']} asked for (weights stored as f32)"
    assert config["kernels"] in info.kernels
    # one format for every matrix, e.g. "q8 x22"
    assert re.fullmatch(config["formats"] + r" x\d+", info.weight_formats), info.weight_formats
    assert info.weight_bytes / info.weight_parameters == config["bytes_per_parameter"]
    # f16 keys and values wherever the projections are not f32, unless asked
    assert info.kv_cache_dtype == config.get("kv", "f32" if info.precision == "f32" else "f16")
    line = daemon.wait_for_log(r'msg="model loaded and warmed up"', 0)
    assert f"precision={info.precision} " in line and f"weight_bytes={info.weight_bytes}" in line
    assert f"kv_cache_dtype={info.kv_cache_dtype} " in line


def assert_same_bits(got, want):
    """The same numbers, to lmscore-local's decimal output."""
    for g, w in zip(got, want):
        assert max(differences(g, w)) <= 2e-6 * max(1.0, max(abs(x) for r in w for x in r))


def test_scores_are_the_engines_on_that_tier(served):
    name, config, daemon = served
    tier = info_of(daemon).isa
    for apply_softmax in (False, True):
        *want, local_tier = local(config, apply_softmax, tier)
        assert local_tier == tier
        assert_same_bits(score(daemon, apply_softmax), want)


def test_scores_against_the_default_tier_are_as_the_contract_says(served):
    # bits where the daemon's tier and the default one compute the same
    # sequence (--isa avx2 against AVX-512, say), else within the gates
    name, config, daemon = served
    tier = info_of(daemon).isa
    softmax, logprobs, default_tier = local(config, True)
    got = score(daemon, True)
    if same_sequence(config["precision"], tier, default_tier):
        assert_same_bits(got, (softmax, logprobs))
        return
    d = differences(got[1], logprobs)
    s = differences(got[0], softmax)
    rho = min(spearman([row[j] for row in got[1]], [row[j] for row in logprobs])
              for j in range(len(LABELS)))
    print(f"{name}: {tier} against {default_tier}: |dlogprob| max {max(d):.3g} "
          f"mean {statistics.mean(d):.3g}; |dscore| max {max(s):.3g} mean "
          f"{statistics.mean(s):.3g}; Spearman {rho:.5f}")
    if config["precision"] == "bf16":
        assert max(s) <= GATES["score_max"] and statistics.mean(s) <= GATES["score_mean"]
        assert rho >= GATES["spearman"]
    else:
        assert max(d) <= GATES["logprob_max"] and statistics.mean(d) <= GATES["logprob_mean"]


def test_scores_are_close_to_f32(served, f32_numbers):
    name, config, daemon = served
    softmax, logprobs = score(daemon, True)
    tol = TOLERANCE[config["precision"]]
    d_logprob = differences(logprobs, f32_numbers[1])
    d_softmax = differences(softmax, f32_numbers[0])
    print(f"{name}: |dlogprob| max {max(d_logprob):.3g} mean {statistics.mean(d_logprob):.3g}, "
          f"|dsoftmax| max {max(d_softmax):.3g}")
    assert max(d_logprob) <= tol["logprob_max"] and statistics.mean(d_logprob) <= tol["logprob_mean"]
    assert max(d_softmax) <= tol["softmax_max"]
    # the precision took effect: bf16 and int8 are not f32 (which differs from
    # lmscore-local's decimal output only in its last digit)
    assert (max(d_logprob) > 1e-4) == (config["precision"] != "f32")


def build_info_of(daemon):
    scrape = Metrics(daemon).scrape()
    build_info = [dict(labels) for sample, labels in scrape if sample == "lmscore_build_info"]
    assert len(build_info) == 1
    assert value(scrape, "lmscore_build_info", **build_info[0]) == 1
    return build_info[0]


def test_build_info_reports_the_precision_and_tier_in_use(served):
    name, config, daemon = served
    info, build_info = info_of(daemon), build_info_of(daemon)
    assert build_info["precision"] == config["precision"]
    assert info.isa and build_info["isa"] == info.isa
    assert build_info["isa_dropped"] == info.isa_dropped


def test_a_dropped_tier_is_named_with_why():
    # the hook makes auto take the CPU for one with AMX whose amx tier then
    # fails: the OS refuses the tile state, or its self-check mismatches
    with Daemon(*METRICS, binary=LMSCORED_TEST_HOOKS, env={"LMSCORE_TEST_DROP_AMX": "1"}) as d:
        info = info_of(d)
        assert info.isa and info.isa != "amx"
        assert re.match(r"amx(: Linux refused the tile state|'s self-check differs|"
                        r" faulted)", info.isa_dropped), info.isa_dropped
        line = d.wait_for_log(r'msg="compute tier dropped"', 0)
        assert f'isa={info.isa} ' in line and "dropped=" in line
        build_info = build_info_of(d)
        assert (build_info["isa"], build_info["isa_dropped"]) == (info.isa, info.isa_dropped)
        cli = subprocess.run([os.path.join(BUILD, "clients", "c", "lmscore"), "info", "--target",
                              d.target], capture_output=True, text=True, timeout=60)
        assert cli.returncode == 0, cli.stderr
        assert f"isa: {info.isa}\n" in cli.stdout
        assert f"isa_dropped: {info.isa_dropped}\n" in cli.stdout
    if "amx_tile" not in cpu_flags():  # without the hook, such a CPU drops nothing
        with Daemon() as d:
            assert info_of(d).isa_dropped == "" and "compute tier dropped" not in d.log()


def test_a_faulting_self_check_drops_its_tier_and_the_daemon_serves():
    # the hook takes the CPU for one with AVX-512 BF16 whose self-check then
    # raises SIGSEGV (11): in the check's own process, never the daemon's
    env = {"LMSCORE_TEST_SELF_CHECK_SIGNAL": "11"}
    with Daemon(*METRICS, "--http-listen", "127.0.0.1:0", binary=LMSCORED_TEST_HOOKS,
                env=env) as d:
        info = info_of(d)
        assert info.isa_dropped == "avx512-bf16 faulted (Segmentation fault) in its self-check"
        assert info.isa and info.isa != "avx512-bf16"
        line = d.wait_for_log(r'msg="compute tier dropped"', 0)
        assert "Segmentation fault" in line
        status, _, body = Http(d).post("/health", b"", method="GET")
        assert status == 200, body
        got, _ = score(d, False)
    # the f32 demo model: every vector tier gives the engine's own bits
    want, _, _ = local({"precision": "auto"}, False)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == pytest.approx(w, rel=1e-6, abs=0)


def test_defaults_serve_on_the_fastest_tier():
    flags = cpu_flags()
    with Daemon("--http-listen", "127.0.0.1:0") as d:
        info = info_of(d)
        status, _, body = Http(d).post("/health", b"", method="GET")
        assert status == 200, body
    if "avx512_bf16" in flags and "amx_tile" not in flags:
        assert (info.isa, info.isa_dropped) == ("avx512-bf16", "")


@pytest.mark.parametrize("args,env,message", [
    (["--precision", "fp16"], {}, "lmscored: flag --precision: 'fp16' is not auto, f32, bf16, "
     "bf16x2, int8 or int8x2"),
    ([], {"LMSCORE_PRECISION": "INT8"}, "lmscored: LMSCORE_PRECISION --precision: 'INT8' is not "
     "auto, f32, bf16, bf16x2, int8 or int8x2"),
    (["--kv-cache-dtype", "bf16"], {}, "lmscored: flag --kv-cache-dtype: 'bf16' is not auto, f32 "
     "or f16"),
    (["--isa", "avx3"], {}, "lmscored: flag --isa: 'avx3' is not one of "
     "auto|amx|avx512-bf16|avx512-vnni|avx512|avx2|generic|amx-emulated"),
    ([], {"LMSCORE_ISA": "sse2"}, "lmscored: LMSCORE_ISA --isa: 'sse2' is not one of "
     "auto|amx|avx512-bf16|avx512-vnni|avx512|avx2|generic|amx-emulated"),
])
def test_a_bad_value_is_a_startup_error(args, env, message):
    out = subprocess.run([LMSCORED, "--model", MODEL, "--listen", "127.0.0.1:0", *args],
                         capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines()[-1] == message, out.stderr
    assert "listening" not in out.stderr


@pytest.mark.platform
def test_a_tier_the_cpu_cannot_run_stops_the_start():
    if "avx512f" in cpu_flags():
        pytest.skip("this CPU runs every AVX-512 tier")
    out = subprocess.run([LMSCORED, "--model", MODEL, "--listen", "127.0.0.1:0", "--isa",
                          "avx512"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert "isa avx512 needs AVX-512 F, BW and VL, which this CPU lacks" in out.stderr
