"""The set-up files agree with each other, and the Makefile's guard says what it should.

pyproject.toml, the Makefile, environment.yml (conda users), binder/ (mybinder.org and
repo2docker) and README.md each state the supported TensorFlow and Python. Everything here
runs offline in a few seconds: files are parsed, binder's scripts run with a stand-in
``python``, and ``make`` runs its Python and platform check with stand-in interpreters that
report a version and a platform. Whether each TensorFlow release really resolves against
the package index is `make check-versions` (online); `make test-oldest` runs the tests on
the oldest release. No TensorFlow is imported.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support.paths import ci_targets

if sys.version_info >= (3, 11):
    import tomllib
else:  # the test extra installs tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
MAKEFILE = ROOT / "Makefile"
TF_NAMES = {"tensorflow", "tensorflow-cpu"}
TF_EXTRAS = ("cpu", "cuda", "macos")

# The Pythons each supported TensorFlow publishes wheels for (cp tags on PyPI, read with
# `pip install --dry-run --report - --no-deps --only-binary=:all: --python-version X.Y
# --target t tensorflow-cpu==V`). Widening pyproject's range fails the tests below until
# this table names the new release: look its wheels up, then run `make check-versions`.
TF_WHEEL_PYTHONS = {
    "2.19": ("3.9", "3.12"),
    "2.20": ("3.9", "3.13"),
    "2.21": ("3.10", "3.13"),
}

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def minor(version: str) -> tuple[int, int]:
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)


def pythons(low: str, high: str) -> set[tuple[int, int]]:
    """Every 3.x from low to high, both included."""
    return {(3, m) for m in range(minor(low)[1], minor(high)[1] + 1)}


def allowed_pythons(spec: SpecifierSet) -> set[tuple[int, int]]:
    return {(3, m) for m in range(0, 30) if spec.contains(f"3.{m}.0")}


def tf_minors(spec: SpecifierSet) -> set[str]:
    """The TensorFlow 2.x minor releases a specifier admits (checked at x.y.0 and x.y.9)."""
    return {f"2.{m}" for m in range(0, 40) if any(spec.contains(f"2.{m}.{p}") for p in (0, 9))}


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


@pytest.fixture(scope="module")
def makevars() -> dict[str, str]:
    """The Makefile's simple assignments (NAME := value, NAME ?= value)."""
    found = {}
    for line in MAKEFILE.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Z_]+)\s*[:?]?=\s*(.*?)\s*$", line)
        if m and m.group(1) not in found:
            found[m.group(1)] = m.group(2)
    return found


@pytest.fixture(scope="module")
def tf_range(project) -> SpecifierSet:
    """The one TensorFlow specifier every build extra uses."""
    specs = set()
    for extra in TF_EXTRAS:
        reqs = [Requirement(r) for r in project["optional-dependencies"][extra]]
        tf = [r for r in reqs if r.name in TF_NAMES]
        assert tf, f"the {extra!r} extra installs no TensorFlow"
        specs |= {str(r.specifier) for r in tf}
    assert len(specs) == 1, f"the build extras disagree on TensorFlow's versions: {specs}"
    return SpecifierSet(specs.pop())


# --- versions: pyproject, Makefile, environment.yml, binder, README ----------------------


def test_tensorflow_range_is_the_supported_releases(tf_range, makevars):
    supported = tf_minors(tf_range)
    assert supported == set(TF_WHEEL_PYTHONS), (
        f"pyproject admits TensorFlow {sorted(supported)}; TF_WHEEL_PYTHONS above knows "
        f"{sorted(TF_WHEEL_PYTHONS)}: look up the new release's wheels"
    )
    newest, oldest = max(supported, key=minor), min(supported, key=minor)
    assert makevars["TF_RANGE"] == f"{oldest}-{newest}"
    assert makevars["OLDEST_TF"] == oldest, "make test-oldest must install the oldest release"


def test_tensorboard_and_keras_cover_every_supported_release(project, tf_range, makevars):
    deps = {Requirement(r).name: Requirement(r) for r in project["dependencies"]}
    # TensorFlow 2.19 and 2.20 pin TensorBoard ~=2.19.0, ~=2.20.0; 2.21 asks for none.
    assert tf_minors(deps["tensorboard"].specifier) == tf_minors(tf_range)
    keras = deps["keras"].specifier
    assert keras.contains("3.999") and not keras.contains("4.0")
    # The Keras make test-oldest pins is the oldest one dpkit admits.
    assert keras.contains(f"{makevars['OLDEST_KERAS']}.0")
    assert not keras.contains(f"3.{minor(makevars['OLDEST_KERAS'])[1] - 1}.9")


def test_requires_python_is_what_the_tensorflow_wheels_allow(project, makevars):
    spec = SpecifierSet(project["requires-python"])
    # Every Python some supported release has a wheel for, from dpkit's own floor (3.10
    # syntax: the PY_MIN the Makefile checks, ruff's target-version) up.
    wheels = set().union(*(pythons(lo, hi) for lo, hi in TF_WHEEL_PYTHONS.values()))
    floor = minor(makevars["PY_MIN"])
    assert allowed_pythons(spec) == {v for v in wheels if v >= floor}


def test_requires_python_is_the_makefile_check(project, makevars):
    spec = SpecifierSet(project["requires-python"])
    assert allowed_pythons(spec) == pythons(makevars["PY_MIN"], makevars["PY_MAX"])
    # test-oldest's own ceiling: the newest Python the oldest release has a wheel for.
    oldest_max = re.search(r"\),([\d.]+),", makevars["OLDEST_PY_MAX"]).group(1)
    assert oldest_max == TF_WHEEL_PYTHONS[makevars["OLDEST_TF"]][1]


def test_ruff_targets_the_oldest_python(makevars):
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    assert tool["ruff"]["target-version"] == "py" + makevars["PY_MIN"].replace(".", "")


def every_release_has_a_wheel(version: str) -> bool:
    return all(minor(lo) <= minor(version) <= minor(hi) for lo, hi in TF_WHEEL_PYTHONS.values())


def conda_python(path: Path) -> str:
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    pins = [d for d in env["dependencies"] if isinstance(d, str) and re.match(r"python\b", d)]
    assert len(pins) == 1, f"{path.name}: one python pin, found {pins}"
    return re.fullmatch(r"python\s*=+\s*([\d.]+)", pins[0]).group(1)


def test_environment_yml_agrees_with_pyproject(project, tf_range):
    path = ROOT / "environment.yml"
    version = conda_python(path)
    assert SpecifierSet(project["requires-python"]).contains(version + ".0")
    assert every_release_has_a_wheel(version), f"python={version} misses a TensorFlow wheel"
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert any(re.fullmatch(r"(-e\s+)?\.\[[a-z,]*\bcpu\b[a-z,]*\]", p) for p in pip), pip
    # Its comments name TensorFlow's versions: the same as pyproject's, never a stale pin.
    text = path.read_text(encoding="utf-8")
    named = re.findall(r"TensorFlow\s+([~<>=!][^\s)]*)", text)
    assert named, "environment.yml should say which TensorFlow its pip line installs"
    assert {SpecifierSet(s) for s in named} == {tf_range}, named
    for v in re.findall(r"TensorFlow\s+(\d+\.\d+)\b", text):
        assert v in TF_WHEEL_PYTHONS, f"environment.yml names TensorFlow {v}"


def test_binder_python_has_every_tensorflow(project):
    version = conda_python(BINDER / "environment.yml")
    assert version in ("3.11", "3.12")
    assert SpecifierSet(project["requires-python"]).contains(version + ".0")
    assert every_release_has_a_wheel(version)


def test_readme_states_the_supported_versions(makevars):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    para = re.search(r"\*\*Supported versions\.\*\*(.*?)\n\n", readme, re.S)
    assert para, "README: a paragraph starting **Supported versions.**"
    text = " ".join(para.group(1).split())
    *rest, last = sorted(TF_WHEEL_PYTHONS, key=minor)
    assert f"TensorFlow {', '.join(rest)} and {last}" in text, text
    assert f"Python {makevars['PY_MIN']}-{makevars['PY_MAX']}" in text


# --- binder/ ------------------------------------------------------------------------------


def test_binder_badge_is_made_from_the_repository_url_and_launch_ref(project):
    repo = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+)", project["urls"]["Repository"])
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    ref = tool["dpkit"]["launch"]["ref"]  # the one place the ref is written
    lesson = "lessons/00_setup_and_devices.ipynb"
    assert (ROOT / lesson).exists()
    badge = (
        "[![Binder](https://mybinder.org/badge_logo.svg)]"
        f"(https://mybinder.org/v2/gh/{repo.group(1)}/{ref}?urlpath=lab/tree/{lesson})"
    )
    assert badge in (ROOT / "README.md").read_text(encoding="utf-8")


def test_binder_environment_parses_and_installs_nothing_else():
    env = yaml.safe_load((BINDER / "environment.yml").read_text(encoding="utf-8"))
    assert env["channels"] == ["conda-forge"]
    # dpkit and TensorFlow come from postBuild with pip; a pip section here would run first.
    assert all(isinstance(d, str) for d in env["dependencies"]), env["dependencies"]
    assert "pip" in env["dependencies"]


def test_protobuf_stays_below_7_while_tensorflow_2_20_is_supported(project, tf_range):
    """TensorFlow 2.20's write_graph passes float_format to protobuf's MessageToString;
    protobuf 7 removed it (found by make test-oldest OLDEST_TF=2.20: the TF1 launcher)."""
    if "2.20" not in tf_minors(tf_range):
        pytest.skip("TensorFlow 2.20 is no longer supported")
    deps = {Requirement(r).name: Requirement(r) for r in project["dependencies"]}
    assert "protobuf" in deps and not deps["protobuf"].specifier.contains("7.0.0")
    assert deps["protobuf"].specifier.contains("6.31.1"), "TensorFlow 2.21 needs >=6.31.1"
    assert deps["protobuf"].specifier.contains("5.29.6"), "TensorFlow 2.19 needs <6"


# What reaches a learner's server, with the advisories each floor keeps out: (the last release
# affected, the first fixed, the advisory and where it is stated).
ADVISORIES = {
    "jupyter-server-proxy": [
        ("4.1.0", "4.1.1", "CVE-2024-28179, unauthenticated websockets (GHSA-w3vc-fx9p-wp4v)"),
        ("4.1.2", "4.2.0", "CVE-2024-35225, XSS in /proxy (GHSA-fvcq-4x64-hqxr)"),
    ],
    "jupyter-server": [
        ("2.19.0", "2.20.0", "CVE-2026-44727, stored XSS in nbconvert (GHSA-fcw5-x6j4-ccmp)"),
    ],
    "jupyterlab": [
        ("4.6.1", "4.6.2", "CVE-2026-73415, -73417, -73627 (JupyterLab 4.6.2's release)"),
    ],
}


@pytest.mark.parametrize("name", sorted(ADVISORIES))
def test_the_lab_extra_keeps_out_every_advisory_and_the_lock_is_past_it(project, name):
    lab = {
        canonicalize_name(Requirement(r).name): Requirement(r).specifier
        for r in project["optional-dependencies"]["lab"]
    }
    assert {"jupyter-server-proxy", "jupyterlab", "ipywidgets"} <= set(lab)
    assert name in lab, f"the lab extra sets no floor for {name}"
    locked = {
        canonicalize_name(line.split("==")[0]): line.split("==")[1].strip()
        for line in (ROOT / "requirements" / "lock-linux-cpu-py311.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    for affected, fixed, advisory in ADVISORIES[name]:
        assert not lab[name].contains(affected), f"{name} {affected} is allowed: {advisory}"
        assert Version(locked[name]) >= Version(fixed), f"the lock pins {name} {locked[name]}"
    newest_fix = max((Version(fixed) for _, fixed, _ in ADVISORIES[name]))
    assert lab[name].contains(str(newest_fix)), f"{name} {newest_fix} is refused: a floor too high"


@pytest.mark.parametrize("name", ["postBuild", "start"])
def test_binder_scripts_are_executable_bash(name):
    path = BINDER / name
    assert os.access(path, os.X_OK), f"chmod +x binder/{name}"
    assert path.read_text(encoding="utf-8").startswith("#!/bin/bash\n")
    subprocess.run(["bash", "-n", str(path)], check=True)


def stand_in(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_postbuild_installs_dpkit_with_cpu_and_lab_and_the_checker_from_the_root(tmp_path):
    """postBuild runs with a stand-in `python` that records how it is called."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "calls"
    stand_in(bin_ / "python", f'printf "%s|%s\\n" "$PWD" "$*" >> {log}\n')
    env = {"PATH": f"{bin_}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)}
    # From elsewhere, as repo2docker might: the script finds the repository's root itself.
    subprocess.run([str(BINDER / "postBuild")], cwd=tmp_path, env=env, check=True)
    calls = [line.split("|", 1) for line in log.read_text().splitlines()]
    installs = [args.split() for cwd, args in calls if args.startswith("-m pip install")]
    assert len(installs) == 1, calls
    assert all(Path(cwd) == ROOT for cwd, _ in calls)
    targets = [a for a in installs[0][3:] if not a.startswith("-")]
    assert "-e" not in installs[0] and "--editable" not in installs[0], "install, not -e"
    # dpkit, and the course's checker beside it (the exercises' check cells call it)
    assert len(targets) == 2 and targets[1] == "./checks", targets
    m = re.fullmatch(r"\.\[([a-z,]+)\]", targets[0])
    assert m and {"cpu", "lab"} <= set(m.group(1).split(",")), targets


def test_start_sets_quiet_tensorflow_for_kernels_and_runs_the_server():
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [str(BINDER / "start"), "sh", "-c", 'echo "$TF_CPP_MIN_LOG_LEVEL $TF_ENABLE_ONEDNN_OPTS"'],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["3", "0"]


# --- make help ----------------------------------------------------------------------------


def run_make(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    # Not the caller's make settings: a make above us (make test-oldest OLDEST_TF=2.20)
    # exports its command-line variables, which would override the Makefile's defaults.
    ours = set(re.findall(r"^\s*(?:export\s+)?([A-Z_]+)\s*[:?]?=", MAKEFILE.read_text(), re.M))
    drop = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"} | ours
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def makefile_targets() -> set[str]:
    """The targets a person types: the .PHONY names and every rule named in plain words."""
    text = MAKEFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    phony = set()
    for m in re.finditer(r"^\s*\.PHONY\s*:(.*)$", text, re.M):
        phony |= {t for t in m.group(1).split() if not t.startswith("$")}
    rules = set(re.findall(r"^([a-z][a-z0-9-]*)\s*:(?!=)", text, re.M))
    assert rules - phony == set(), f"rules missing from .PHONY: {rules - phony}"
    assert phony - rules == set(), f".PHONY names with no rule: {phony - rules}"
    return phony


@needs_make
def test_make_help_lists_every_target_and_is_the_default():
    targets = makefile_targets()
    assert {"help", "lab", "test", "test-oldest", "test-browser", "clean"} <= targets
    shown = run_make("help")
    assert shown.returncode == 0, shown.stderr
    listed = {}
    for line in shown.stdout.splitlines():
        m = re.match(r"^  (\S+)\s+(\S.*)$", line)
        if m:
            listed[m.group(1)] = m.group(2)
    assert set(listed) == targets, f"make help misses {targets - set(listed)}"
    assert all(len(d) > 10 for d in listed.values())
    default = run_make()
    assert default.returncode == 0 and default.stdout == shown.stdout


# --- CI: .ci/run --------------------------------------------------------------------------


@needs_make
def test_ci_runs_the_oldest_and_the_newest_python_pyproject_admits(project):
    assert "test-pythons" in ci_targets()
    allowed = sorted(allowed_pythons(SpecifierSet(project["requires-python"])))
    ends = [f"{v[0]}.{v[1]}" for v in (allowed[0], allowed[-1])]
    shown = run_make("--eval=shown-pythons: ; @echo $(PYTHONS)", "shown-pythons")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ends
    recipe = MAKEFILE.read_text(encoding="utf-8").split("\ntest-pythons:", 1)[1].split("\n\n")[0]
    assert "for v in $(PYTHONS)" in recipe and "pytest tests/unit" in recipe


def test_ci_runs_every_target_the_makefile_says_a_check_runs_in():
    text = MAKEFILE.read_text(encoding="utf-8")
    table = text.split("# Where each check runs.", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"make ([a-z][a-z-]*)", table))
    assert {"test", "test-colab", "test-portable", "test-pythons"} <= named
    assert named <= set(ci_targets()), f"not run by .ci/run: {named - set(ci_targets())}"


# --- the Python and platform check --------------------------------------------------------


def fake_python(tmp_path: Path, report: str) -> Path:
    """An interpreter that reports `report` ("3.9 Linux x86_64 glibc") to the Makefile's check
    and fails at anything else (creating a venv, say)."""
    return stand_in(
        tmp_path / f"python-{report.replace(' ', '-')}",
        f'if [ "$1" = -c ]; then echo "{report}"; else exit 1; fi\n',
    )


def check(tmp_path: Path, report: str, *goal: str) -> subprocess.CompletedProcess:
    return run_make(*(goal or ("check-python",)), f"PYTHON={fake_python(tmp_path, report)}")


@needs_make
def test_the_check_accepts_exactly_requires_python(tmp_path, project):
    spec = SpecifierSet(project["requires-python"])
    allowed = sorted(allowed_pythons(spec))
    below, lowest, highest, above = (
        (3, allowed[0][1] - 1),
        allowed[0],
        allowed[-1],
        (3, allowed[-1][1] + 1),
    )
    for version, ok in ((below, False), (lowest, True), (highest, True), (above, False)):
        v = f"{version[0]}.{version[1]}"
        result = check(tmp_path, f"{v} Linux x86_64 glibc")
        assert (result.returncode == 0) == ok, (v, result.stdout, result.stderr)
        if not ok:
            assert f"is Python {v}" in result.stderr
            assert "make PYTHON=python3." in result.stderr, "name the fix"
            assert "check-python" in result.stderr, "repeat the goal that was asked for"


@needs_make
@pytest.mark.parametrize(
    "report, says",
    [
        ("3.12 Darwin x86_64 -", "Intel"),
        ("3.12 Windows AMD64 -", "WSL2"),
        ("3.12 Linux x86_64 -", "glibc"),
        ("3.12 Linux riscv64 glibc", "no wheel for Linux on riscv64"),
        ("3.12 FreeBSD amd64 -", "no wheel for FreeBSD"),
    ],
)
def test_the_check_names_platforms_without_a_tensorflow_wheel(tmp_path, report, says):
    result = check(tmp_path, report)
    assert result.returncode != 0
    assert says in result.stderr, result.stderr


@needs_make
@pytest.mark.parametrize("report", ["3.12 Linux aarch64 glibc", "3.12 Darwin arm64 -"])
def test_the_check_passes_platforms_with_a_wheel(tmp_path, report):
    result = check(tmp_path, report)
    assert result.returncode == 0, result.stderr


@needs_make
def test_a_python_that_does_not_run_is_named(tmp_path):
    result = run_make("check-python", f"PYTHON={tmp_path / 'no-such-python'}")
    assert result.returncode != 0
    assert "cannot run PYTHON=" in result.stderr


@needs_make
def test_the_install_stops_before_creating_anything(tmp_path):
    venv = tmp_path / "venv"
    result = run_make(
        "env", f"PYTHON={fake_python(tmp_path, '3.9 Linux x86_64 glibc')}", f"VENV={venv}"
    )
    assert result.returncode != 0 and "is Python 3.9" in result.stderr
    assert not venv.exists()


@needs_make
def test_test_oldest_wants_a_python_its_tensorflow_has_a_wheel_for(tmp_path, makevars):
    venv = tmp_path / "oldest"
    newest = TF_WHEEL_PYTHONS[makevars["OLDEST_TF"]][1]
    too_new = f"3.{minor(newest)[1] + 1}"
    result = check(tmp_path, f"{too_new} Linux x86_64 glibc", "test-oldest", f"OLDEST_VENV={venv}")
    assert result.returncode != 0
    assert f"needs Python {makevars['PY_MIN']}-{newest}" in result.stderr
    assert not venv.exists()


@needs_make
def test_a_broken_venv_is_removed_and_made_again(tmp_path):
    """Its python is a dangling link and its stamp is up to date: the repair still runs.
    The stand-in interpreter then cannot make a venv, and says so."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(tmp_path / "gone")
    (venv / ".dpkit-cpu").touch()
    result = run_make(
        "env",
        "TF_BUILD=cpu",
        f"VENV={venv}",
        f"PYTHON={fake_python(tmp_path, '3.12 Linux x86_64 glibc')}",
    )
    assert "is broken: its python" in result.stdout, result.stdout + result.stderr
    assert "Removing it and creating it again" in result.stdout
    assert "made no working venv" in result.stderr
    assert result.returncode != 0 and not venv.exists()


def test_every_dpkit_package_is_installed():
    """A non-editable install (Binder, Colab's pip) ships every folder of dpkit with code."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    listed = set(tool["setuptools"]["packages"])
    found = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "dpkit").rglob("__init__.py")
    }
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages"
    assert listed <= found, f"[tool.setuptools] packages names missing folders {listed - found}"
