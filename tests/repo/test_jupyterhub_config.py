"""deploy/jupyterhub/: the Zero to JupyterHub values (config.yaml) against what the chart,
jupyterhub 4.4.0, accepts (tests/support/z2jh_schema.py says where it comes from), checked
offline with jsonschema, and against the rules the workbook needs that no schema states: the
memory the lessons were measured to take, a network policy that keeps users' TensorFlow
ports inside their pods, idle servers culled, the exchange volume mounted where the students'
config (written by tools/course.py) says it is, and a uid of its own for each user. Every
rule is shown to refuse a plausible slip in a copy of the values."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml
from traitlets.config import Config

from dpkit.plumbing import quota
from tests.support.paths import ROOT
from tests.support.z2jh_schema import VALUES
from tools import course as course_tool

HERE = ROOT / "deploy" / "jupyterhub"
GiB, MiB = 2**30, 2**20
# The chart's default fsGid (values.yaml, 4.4.0): the group that owns users' home volumes.
CHART_FS_GID = 100
# Measured here (deploy/jupyterhub/README.md, "Memory"): lesson 01's kernel, the largest
# lesson with one process (tools/memory_peak.py: 1,946 MiB; README's table, 1.90 GiB), and an
# idle JupyterLab server with nbgrader's extensions after a browser's first requests (138 MiB
# RSS). The limit's rule is dpkit's own: quota.need(4), what lessons 05 and 09 ask of the
# memory limit before they run their four contenders side by side.
LESSON_01_PEAK = 1946 * MiB
SERVER = 140 * MiB
STUDENTS_CONFIG = "/etc/jupyter/nbgrader_config.py"


def load(name: str):
    return list(yaml.safe_load_all((HERE / name).read_text(encoding="utf-8")))


def jupyterhub_bytes(value) -> int:
    """Bytes from a memory value as JupyterHub 5.5.0 reads it (jupyterhub/traitlets.py,
    ByteSpecification.validate): a number is bytes; a string is a number and one of K, M, G, T
    (powers of 1024). Anything else stops the hub from starting a server."""
    if isinstance(value, (int, float)):
        return int(value)
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    if not isinstance(value, str) or not value or value[-1] not in units:
        raise ValueError(f"{value!r} is not a valid memory specification (K, M, G or T)")
    return int(float(value[:-1]) * units[value[-1]])


def students_exchange(text: str) -> tuple[str, str]:
    """(course id, Exchange.root) of a students' nbgrader config, by running it."""
    c = Config()
    exec(compile(text, STUDENTS_CONFIG, "exec"), {"get_config": lambda: c})
    return c.CourseDirectory.course_id, c.Exchange.root


def uids(values: dict) -> tuple[dict[int, int], int | None]:
    """({JupyterHub user id: uid}, gid) that hub.extraConfig gives three users' servers."""
    c = Config()
    for snippet in (values.get("hub", {}).get("extraConfig") or {}).values():
        exec(compile(snippet, "hub.extraConfig", "exec"), {"c": c})
    uid, gid = c.KubeSpawner.get("uid", 1000), c.KubeSpawner.get("gid")
    spawners = {n: SimpleNamespace(user=SimpleNamespace(id=n, name=f"user{n}")) for n in (1, 2, 3)}
    return {n: uid(s) if callable(uid) else uid for n, s in spawners.items()}, gid


def memory_problems(memory: dict) -> list[str]:
    found = []
    try:
        guarantee = jupyterhub_bytes(memory.get("guarantee"))
        limit = jupyterhub_bytes(memory.get("limit"))
    except ValueError as error:
        return [f"singleuser.memory: {error}"]
    if guarantee > limit:  # Kubernetes' pod validation refuses it, and the spawn fails
        found.append("singleuser.memory: the guarantee must be less than or equal to the limit")
    if guarantee < LESSON_01_PEAK + SERVER:
        found.append("singleuser.memory.guarantee: below lesson 01's kernel and the server")
    if limit < quota.need(4) + SERVER:
        found.append("singleuser.memory.limit: lessons 05 and 09 cannot run 4 contenders at once")
    return found


def network_problems(policy: dict) -> list[str]:
    found = []
    if policy.get("enabled") is not True:
        found.append("singleuser.networkPolicy: not enabled, every pod may reach users' ports")
    if policy.get("ingress"):  # rules added to the hub's and proxy's; {} admits everyone
        found.append("singleuser.networkPolicy.ingress: opens users' pods to other sources")
    if policy.get("allowedIngressPorts"):  # the chart admits these ports from any source
        found.append("singleuser.networkPolicy.allowedIngressPorts: ports open to any source")
    if policy.get("interNamespaceAccessLabels") == "accept":
        found.append(
            "singleuser.networkPolicy.interNamespaceAccessLabels: other namespaces admitted"
        )
    if policy.get("egressAllowRules", {}).get("privateIPs") is not False:
        found.append("singleuser.networkPolicy.egressAllowRules.privateIPs: users reach other pods")
    return found


def exchange_problems(singleuser: dict, manifests: list[dict]) -> list[str]:
    found = []
    (claim,) = [m for m in manifests if m["kind"] == "PersistentVolumeClaim"]
    (job,) = [m for m in manifests if m["kind"] == "Job"]
    if "ReadWriteMany" not in claim["spec"]["accessModes"]:
        found.append("exchange.yaml: the exchange must be ReadWriteMany (every user mounts it)")
    storage = singleuser.get("storage", {})
    volumes = {
        v["name"]: v for v in storage.get("extraVolumes") or [] if "persistentVolumeClaim" in v
    }
    names = [
        n
        for n, v in volumes.items()
        if v["persistentVolumeClaim"].get("claimName") == claim["metadata"]["name"]
    ]
    mounts = [m["mountPath"] for m in storage.get("extraVolumeMounts") or [] if m["name"] in names]
    if len(mounts) != 1:
        return [
            *found,
            f"singleuser.storage: the claim {claim['metadata']['name']} is not mounted once",
        ]
    files = [
        f
        for f in (singleuser.get("extraFiles") or {}).values()
        if f.get("mountPath") == STUDENTS_CONFIG and "stringData" in f
    ]
    if len(files) != 1:
        return [*found, f"singleuser.extraFiles: no students' config at {STUDENTS_CONFIG}"]
    course_id, root = students_exchange(files[0]["stringData"])
    if root != mounts[0]:
        found.append(f"students' config: Exchange.root {root} is not the volume's {mounts[0]}")
    if files[0]["stringData"] != course_tool.student_config_text(course_id, Path(root)):
        found.append("students' config: not what tools/course.py student-config writes")
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    chmod_target = (
        container["command"][-1] if container["command"][:2] == ["chmod", "1777"] else None
    )
    job_mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
    if chmod_target != root or root not in job_mounts:
        found.append(f"exchange.yaml: the Job must chmod 1777 the exchange it mounts, {root}")
    return found


def uid_problems(values: dict) -> list[str]:
    given, gid = uids(values)
    found = []
    if len(set(given.values())) != len(given) or min(given.values()) <= 1000:
        found.append(f"hub.extraConfig: users' servers must each have a uid of their own: {given}")
    if gid != values["singleuser"].get("fsGid", CHART_FS_GID):
        found.append("hub.extraConfig: the servers' group must own the home volumes (fsGid)")
    return found


def problems(values: dict, manifests: list[dict]) -> list[str]:
    """What helm (the chart's schema), Kubernetes and the workbook would refuse, in words."""
    validator = jsonschema.Draft7Validator(VALUES)
    found = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(values)
    ]
    if found:  # the rules below read keys the schema has just refused
        return found
    singleuser = values.get("singleuser", {})
    found += memory_problems(singleuser.get("memory", {}))
    found += network_problems(singleuser.get("networkPolicy", {}))
    cull = values.get("cull", {})
    if cull.get("enabled") is not True:
        found.append("cull.enabled: idle servers are never stopped")
    if not isinstance(cull.get("timeout"), int) or cull["timeout"] <= 0:
        found.append("cull.timeout: give the idle time, in seconds, after which a server stops")
    found += exchange_problems(singleuser, manifests)
    found += uid_problems(values)
    return found


def test_the_values_are_ones_the_chart_and_the_workbook_accept():
    (values,) = load("config.yaml")
    assert problems(values, load("exchange.yaml")) == []


def test_the_students_config_is_what_course_py_prints(capsys):
    (values,) = load("config.yaml")
    course_tool.main(
        ["student-config", "--course-id", "dpkit101", "--exchange", "/srv/nbgrader/exchange"]
    )
    printed = capsys.readouterr().out
    text = values["singleuser"]["extraFiles"]["nbgrader-students"]["stringData"]
    assert text == printed
    assert students_exchange(printed) == ("dpkit101", "/srv/nbgrader/exchange")
    with pytest.raises(SystemExit, match="absolute path"):
        course_tool.main(["student-config", "--exchange", "exchange"])


def test_the_limits_are_the_measured_peaks_written_in_bytes():
    (values,) = load("config.yaml")
    memory = values["singleuser"]["memory"]
    assert jupyterhub_bytes(memory["guarantee"]) == 2304 * MiB == jupyterhub_bytes("2.25G")
    assert jupyterhub_bytes(memory["limit"]) == 3584 * MiB
    with pytest.raises(ValueError):
        jupyterhub_bytes("3.5GB")


def su(v):
    return v["singleuser"]


SLIPS = {
    "a misspelt key": (
        lambda v: su(v).update(memmory=su(v).pop("memory")),
        "'memmory' was unexpected",
    ),
    "a misspelt egress rule": (
        lambda v: su(v)["networkPolicy"]["egressAllowRules"].update(privateIP=False),
        "'privateIP' was unexpected",
    ),
    "an unknown pull policy": (
        lambda v: su(v)["image"].update(pullPolicy="IfNotPresnt"),
        "'IfNotPresnt' is not one of",
    ),
    "a file with no mount path": (
        lambda v: su(v)["extraFiles"]["nbgrader-students"].pop("mountPath"),
        "'mountPath' is a required property",
    ),
    "the culler's timeout as a string": (
        lambda v: v["cull"].update(timeout="1h"),
        "'1h' is not of type",
    ),
    "a memory limit below the guarantee": (
        lambda v: su(v)["memory"].update(limit="2G"),
        "less than or equal to the limit",
    ),
    "memory in gigabytes as Kubernetes writes it": (
        lambda v: su(v)["memory"].update(limit="3584Mi"),
        "not a valid memory specification",
    ),
    "a guarantee below lesson 01's peak": (
        lambda v: su(v)["memory"].update(guarantee="1G"),
        "below lesson 01's kernel",
    ),
    "a limit too small for lesson 05's contenders": (
        lambda v: su(v)["memory"].update(limit="2.5G"),
        "cannot run 4 contenders",
    ),
    "ingress open to all": (
        lambda v: su(v)["networkPolicy"].update(ingress=[{}]),
        "opens users' pods",
    ),
    "a TensorFlow port open to any source": (
        lambda v: su(v)["networkPolicy"].update(allowedIngressPorts=[2222]),
        "ports open to any source",
    ),
    "the network policy off": (
        lambda v: su(v)["networkPolicy"].update(enabled=False),
        "not enabled",
    ),
    "users reaching other pods": (
        lambda v: su(v)["networkPolicy"]["egressAllowRules"].update(privateIPs=True),
        "users reach other pods",
    ),
    "cull disabled": (lambda v: v["cull"].update(enabled=False), "idle servers are never stopped"),
    "no cull timeout": (lambda v: v["cull"].pop("timeout"), "give the idle time"),
    "the exchange mounted elsewhere": (
        lambda v: su(v)["storage"]["extraVolumeMounts"][0].update(mountPath="/srv/exchange"),
        "is not the volume's /srv/exchange",
    ),
    "another claim": (
        lambda v: su(v)["storage"]["extraVolumes"][0]["persistentVolumeClaim"].update(
            claimName="exchange"
        ),
        "is not mounted once",
    ),
    "the students' config edited by hand": (
        lambda v: su(v)["extraFiles"]["nbgrader-students"].update(
            stringData="c = get_config()\nc.Exchange.root = '/srv/nbgrader/exchange'\n"
        ),
        "not what tools/course.py student-config writes",
    ),
    "every user uid 1000": (lambda v: v["hub"].pop("extraConfig"), "a uid of their own"),
    "a uid for everyone": (
        lambda v: v["hub"]["extraConfig"].update(
            {"dpkit-uid-per-user": "c.KubeSpawner.uid = 20000\nc.KubeSpawner.gid = 100\n"}
        ),
        "a uid of their own",
    ),
    "a group that does not own the homes": (
        lambda v: v["hub"]["extraConfig"].update(
            {
                "dpkit-uid-per-user": v["hub"]["extraConfig"]["dpkit-uid-per-user"].replace(
                    "= 100", "= 0"
                )
            }
        ),
        "must own the home volumes",
    ),
}


@pytest.mark.parametrize("slip", SLIPS)
def test_each_rule_refuses_a_slip(slip):
    change, words = SLIPS[slip]
    (values,) = load("config.yaml")
    values = copy.deepcopy(values)
    change(values)
    found = problems(values, load("exchange.yaml"))
    assert any(words in p for p in found), found


def test_the_exchange_manifest_refuses_its_own_slips():
    (values,) = load("config.yaml")
    manifests = load("exchange.yaml")
    rwo = copy.deepcopy(manifests)
    rwo[0]["spec"]["accessModes"] = ["ReadWriteOnce"]
    assert any("ReadWriteMany" in p for p in problems(values, rwo))
    wrong_mode = copy.deepcopy(manifests)
    wrong_mode[1]["spec"]["template"]["spec"]["containers"][0]["command"] = [
        "chmod",
        "0777",
        "/srv/nbgrader/exchange",
    ]
    assert any("chmod 1777" in p for p in problems(values, wrong_mode))


def test_the_readme_names_the_chart_version_the_schema_was_written_from():
    text = (HERE / "README.md").read_text(encoding="utf-8")
    assert re.search(r"--version 4\.4\.0\b", text)
    assert "--version 4.4.0" in (HERE / "config.yaml").read_text(encoding="utf-8")
