"""test_dockerfile.py — the Dockerfile, checked without a Docker engine: it
passes two Dockerfile linters; its runtime stage is a non-root, health-checked
image of the daemon, the CLI and the demo model; and the packages that stage
installs provide every shared library the built binaries load (resolved with
ldd and dpkg -S, through the packages' Depends as apt would install them on
top of the base image), with no package that provides none of them."""

import functools
import os
import re
import shlex
import subprocess

import pytest

from conftest import read

BUILD_ROOT_IN_IMAGE = "/src/build/"
# Libraries of a sanitizer test build only; the image's Release build has none.
SANITIZER_RUNTIMES = re.compile(r"^lib(asan|ubsan|tsan|lsan|clang_rt)")


def logical_lines(text):
    """Dockerfile instructions with continuations joined and comments dropped."""
    lines, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") and not current:
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current.strip():
            lines.append(current.strip())
        current = ""
    return lines


def stages(text):
    """[(from_line, [instructions])] per FROM."""
    result = []
    for line in logical_lines(text):
        if line.upper().startswith("FROM "):
            result.append((line, []))
        elif result:
            result[-1][1].append(line)
    return result


def instructions(stage, keyword):
    return [line[len(keyword) + 1:].strip() for line in stage[1]
            if line.upper().startswith(keyword + " ")]


@pytest.fixture(scope="module")
def dockerfile(source_dir):
    return read(os.path.join(source_dir, "Dockerfile"))


@pytest.fixture(scope="module")
def runtime(dockerfile):
    return stages(dockerfile)[-1]


def apt_packages(stage):
    """The packages of the stage's `apt-get install` commands."""
    packages = []
    for run in instructions(stage, "RUN"):
        for command in re.split(r"&&|;", run):
            words = shlex.split(command)
            if words[:2] == ["apt-get", "install"]:
                packages += [w for w in words[2:] if not w.startswith("-")]
    return packages


def copied_from_build(stage):
    """(path in the build tree, destination) of each COPY --from=build."""
    pairs = []
    for copy in instructions(stage, "COPY"):
        words = copy.split()
        if words[0] == "--from=build":
            src, dst = words[1], words[2]
            assert src.startswith(BUILD_ROOT_IN_IMAGE), src
            pairs.append((src[len(BUILD_ROOT_IN_IMAGE):], dst))
    return pairs


def env_of(stage):
    env = {}
    for line in instructions(stage, "ENV"):
        for word in shlex.split(line):
            key, _, value = word.partition("=")
            env[key] = value
    return env


@pytest.mark.parametrize("linter", [
    ["dockerfile-utils", "lint"],
    ["dockerlint", "-f"],
])
def test_linter_passes(npm_tools, source_dir, linter):
    exe = os.path.join(npm_tools, "node_modules", ".bin", linter[0])
    result = subprocess.run([exe, *linter[1:], os.path.join(source_dir, "Dockerfile")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_linter_rejects_a_broken_dockerfile(npm_tools, tmp_path, dockerfile):
    broken = tmp_path / "Dockerfile"
    broken.write_text(dockerfile.replace("--start-period=", "--start-perod="))
    exe = os.path.join(npm_tools, "node_modules", ".bin", "dockerfile-utils")
    result = subprocess.run([exe, "lint", str(broken)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "start-perod" in result.stdout + result.stderr


def test_two_debian_bookworm_stages(dockerfile):
    froms = [s[0] for s in stages(dockerfile)]
    assert len(froms) == 2, froms
    assert re.fullmatch(r"FROM debian:bookworm AS build", froms[0]), froms[0]
    assert re.fullmatch(r"FROM debian:bookworm(-slim)? AS runtime", froms[1]), froms[1]


def test_build_stage_uses_the_dependency_installer(dockerfile):
    build = stages(dockerfile)[0]
    runs = " ".join(instructions(build, "RUN"))
    assert "scripts/install-deps.sh" in runs
    assert "-DCMAKE_BUILD_TYPE=Release" in runs and "--target models" in runs


def test_runtime_runs_as_a_numeric_non_root_user(runtime):
    (user,) = instructions(runtime, "USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_runtime_exposes_grpc_metrics_and_http_and_checks_health(runtime):
    assert instructions(runtime, "EXPOSE") == ["50051 9464 8080"]
    env = env_of(runtime)
    assert env["LMSCORE_LISTEN"] == "0.0.0.0:50051"
    assert env["LMSCORE_METRICS_LISTEN"] == "0.0.0.0:9464"
    assert env["LMSCORE_HTTP_LISTEN"] == "0.0.0.0:8080"
    (health,) = instructions(runtime, "HEALTHCHECK")
    cmd = health[health.index("CMD"):]
    assert '"/usr/bin/lmscore", "health"' in cmd
    assert instructions(runtime, "ENTRYPOINT") == ['["/usr/bin/lmscored"]']


def test_runtime_installs_no_development_packages(runtime):
    packages = apt_packages(runtime)
    assert packages
    assert not [p for p in packages if p.endswith("-dev")]
    assert "--no-install-recommends" in " ".join(instructions(runtime, "RUN"))


def test_runtime_keeps_no_apt_caches(runtime):
    # what apt downloads and indexes (the package lists, pkgcache.bin and
    # srcpkgcache.bin, the .debs: some 90 MB) must not stay in the layer,
    # whatever the base image's apt configuration
    (install,) = [r for r in instructions(runtime, "RUN") if "apt-get install" in r]
    steps = [c.strip() for c in install.split("&&")]
    at = next(i for i, c in enumerate(steps) if c.startswith("apt-get install"))
    assert "apt-get clean" in steps[at:] and "rm -rf /var/lib/apt/lists/*" in steps[at:]


def test_runtime_copies_daemon_cli_and_model(runtime, build_dir):
    copied = dict(copied_from_build(runtime))
    assert copied.get("service/lmscored") == "/usr/bin/lmscored"
    assert copied.get("clients/c/lmscore") == "/usr/bin/lmscore"
    assert copied.get("models/tiny-qwen3.gguf", "").endswith("/tiny-qwen3.gguf")
    for src in copied:
        assert os.path.isfile(os.path.join(build_dir, src)), f"the build made no {src}"


def test_default_model_is_the_baked_one(runtime, source_dir):
    model = dict(copied_from_build(runtime))["models/tiny-qwen3.gguf"]
    assert env_of(runtime)["LMSCORE_MODEL"] == model
    env_file = read(os.path.join(source_dir, "packaging", "lmscored.env"))
    assert f"LMSCORE_MODEL={model}\n" in env_file
    configmap = read(os.path.join(source_dir, "k8s", "configmap.yaml"))
    assert f"LMSCORE_MODEL: {model}\n" in configmap


# --- the runtime package list against the binaries' libraries ---------------

def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(binary):
    """The binary's DT_NEEDED sonames that it uses. A linker without
    --as-needed (clang's default here) also records the libraries that only
    its direct dependencies use; `ldd -u` names those."""
    out = subprocess.run(["objdump", "-p", binary], capture_output=True, text=True,
                         check=True).stdout
    sonames = re.findall(r"^\s*NEEDED\s+(\S+)", out, re.M)
    unused = subprocess.run(["ldd", "-u", "-r", binary], capture_output=True, text=True).stdout
    unused = {os.path.basename(p) for p in re.findall(r"^\s+(/\S+)", unused, re.M)}
    return [s for s in sonames if s not in unused]


def resolved_libraries(binary):
    """soname -> resolved path for the binary's whole library closure (ldd);
    fails on any library the loader cannot find."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    assert "not found" not in out, out
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+) \(", line)
        if m:
            libs[m.group(1)] = m.group(2)
        elif re.match(r"\s*(/\S+) \(", line):  # the dynamic loader
            path = line.split()[0]
            libs[os.path.basename(path)] = path
    return libs


@functools.lru_cache(maxsize=None)
def owning_package(path):
    """The installed package owning path (following alternatives symlinks)."""
    for candidate in (path, os.path.realpath(path)):
        out = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.split(":")[0].strip()
        # dpkg records /lib paths under /usr/lib on merged-/usr systems and the other way round
        alt = candidate.replace("/usr/lib/", "/lib/", 1) if candidate.startswith("/usr/lib/") \
            else candidate.replace("/lib/", "/usr/lib/", 1)
        out = subprocess.run(["dpkg", "-S", alt], capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.split(":")[0].strip()
    pytest.fail(f"no installed package owns {path}")


@functools.lru_cache(maxsize=None)
def installed_packages():
    """name -> {Depends, Pre-Depends, Provides, Essential, Priority} of every
    installed package (one dpkg-query for all; multiarch names without :arch)."""
    fields = ["Package", "Status", "Depends", "Pre-Depends", "Provides", "Essential", "Priority"]
    fmt = "\t".join(f"${{{f}}}" for f in fields) + "\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True,
                         check=True).stdout
    packages = {}
    for line in out.splitlines():
        record = dict(zip(fields, line.split("\t")))
        if "install ok installed" in record["Status"]:
            packages[record["Package"]] = record
    return packages


def names(relations):
    """The package names of a Depends-style field: [[alternatives], ...]."""
    return [[re.split(r"[\s(:]", alt.strip())[0] for alt in clause.split("|")]
            for clause in filter(None, (c.strip() for c in relations.split(",")))]


@functools.lru_cache(maxsize=None)
def providers():
    """virtual package -> an installed package that Provides it."""
    found = {}
    for package, record in installed_packages().items():
        for (name, *_) in names(record["Provides"]):
            found.setdefault(name, package)
    return found


@functools.lru_cache(maxsize=None)
def base_packages():
    """What every Debian image has (a minbase install): the Essential and
    priority-required packages and what they depend on."""
    return dependency_closure(frozenset(
        p for p, r in installed_packages().items()
        if r["Essential"] == "yes" or r["Priority"] == "required"))


def dependency_closure(packages):
    """The packages apt installs for `packages`: the Depends/Pre-Depends
    closure (for an alternative, the one installed here)."""
    db = installed_packages()
    seen, todo = set(), list(packages)
    while todo:
        pkg = todo.pop()
        if pkg in seen:
            continue
        if pkg not in db:
            pytest.fail(f"{pkg} is not installed here, so its dependencies cannot be checked")
        seen.add(pkg)
        for alternatives in names(db[pkg]["Depends"] + "," + db[pkg]["Pre-Depends"]):
            pick = next((n for n in alternatives if n in db), None) or \
                next((providers()[n] for n in alternatives if n in providers()), None)
            if pick is None:
                pytest.fail(f"none of {alternatives} (a dependency of {pkg}) is installed here")
            todo.append(pick)
    return seen


def required_libraries(binary):
    """soname -> path of what the loader must find for the binary as the image
    builds it (gcc links --as-needed): the libraries it uses and everything
    those need, without the unused NEEDED entries a clang link leaves."""
    libs = resolved_libraries(binary)
    required = {}
    for soname in needed(binary):
        required[soname] = libs[soname]
        required.update(resolved_libraries(libs[soname]))
    return required


@pytest.fixture(scope="module")
def binaries(runtime, build_dir):
    paths = [os.path.join(build_dir, src) for src, _ in copied_from_build(runtime)]
    elves = [p for p in paths if is_elf(p)]
    assert len(elves) == 2, elves
    return elves


def test_every_library_comes_from_the_runtime_packages(runtime, binaries):
    listed = apt_packages(runtime)
    available = dependency_closure(listed) | base_packages()
    missing = {}
    for binary in binaries:
        for soname, path in required_libraries(binary).items():
            if SANITIZER_RUNTIMES.match(soname):
                continue
            pkg = owning_package(path)
            if pkg.split(":")[0] not in available:
                missing[soname] = pkg
    assert not missing, f"libraries whose packages the runtime stage lacks: {missing}"


def test_runtime_packages_are_exactly_the_directly_linked_ones(runtime, binaries):
    """Each package providing a NEEDED library is listed (not left to another
    package's Depends), and each listed package provides one."""
    direct = set()
    for binary in binaries:
        libs = resolved_libraries(binary)
        for soname in needed(binary):
            if not SANITIZER_RUNTIMES.match(soname):
                direct.add(owning_package(libs[soname]).split(":")[0])
    listed = set(apt_packages(runtime))
    assert listed - direct == set(), "listed, but no binary links them directly"
    assert direct - listed - base_packages() == set(), "linked directly, but not listed"
