"""The lock file a term pins agrees with pyproject: every requirement is locked, within range.

`make lock` writes requirements/lock-linux-cpu-py311.txt from the venv; `make lab LOCK=...`
installs within it. A lock that pins a version pyproject no longer admits, or misses a
package pyproject asks for, would make that install fail on the day a class starts.
"""

from __future__ import annotations

import re
import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support.paths import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

LOCK = ROOT / "requirements" / "lock-linux-cpu-py311.txt"
EXTRAS = ("cpu", "lab", "test", "grade")  # what make env installs with TF_BUILD=cpu
#: The platform the lock is for (its name says so).
ENVIRONMENT = {
    "platform_machine": "x86_64",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "python_version": "3.11",
    "python_full_version": "3.11.7",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "os_name": "posix",
    "extra": "",
}


def locked(text: str) -> dict[str, Version]:
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert match, f"{LOCK.name}: not an exact pin: {line!r}"
        pins[canonicalize_name(match.group(1))] = Version(match.group(2))
    return pins


def wanted() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in EXTRAS:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return [r for r in reqs if r.marker is None or r.marker.evaluate(ENVIRONMENT)]


def test_every_requirement_is_locked_within_its_range():
    pins = locked(LOCK.read_text(encoding="utf-8"))
    problems = []
    for req in wanted():
        version = pins.get(canonicalize_name(req.name))
        if version is None:
            problems.append(f"{req.name} is not in the lock")
        elif not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name}=={version} is outside pyproject's {req.specifier}")
    assert not problems, f"{LOCK.name}: {'; '.join(problems)} (run make lock)"


def test_the_checks_see_a_missing_and_an_out_of_range_pin():
    pins = locked("numpy==1.20.0\n# comment\nkeras==3.12.0  # trailing\n")
    assert pins == {"numpy": Version("1.20.0"), "keras": Version("3.12.0")}
    numpy = next(r for r in wanted() if r.name == "numpy")
    assert not numpy.specifier.contains(pins["numpy"])
    assert any(r.name == "tensorflow-cpu" for r in wanted())  # the cpu extra's marker holds
