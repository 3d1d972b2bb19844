"""deploy/tfjob.yaml against what Kubeflow's training operator (v1.9.0) accepts: the CRD's
fields, types and required fields, and its webhook's rules (tests/support/tfjob_schema.py says
where each comes from), checked offline with jsonschema. Every rule is shown to refuse a
plausible slip in a copy of the manifest."""

from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml

from tests.support.paths import ROOT
from tests.support.tfjob_schema import TFJOB

CONTAINER_NAME = "tensorflow"  # tensorflow_types.go: TFJobDefaultContainerName


def tfjob() -> dict:
    docs = yaml.safe_load_all((ROOT / "deploy" / "tfjob.yaml").read_text())
    (job,) = [d for d in docs if d and d.get("kind") == "TFJob"]
    return job


def problems(job: dict) -> list[str]:
    """What the API server (schema) and the operator's webhook would refuse, in words."""
    validator = jsonschema.Draft202012Validator(TFJOB)
    found = [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(job)
    ]
    specs = job.get("spec", {}).get("tfReplicaSpecs", {})
    if sum(kind in ("Chief", "Master") for kind in specs) > 1:
        found.append("tfReplicaSpecs: must not have more than 1 Chief or Master role")
    for kind, spec in specs.items():
        containers = (spec or {}).get("template", {}).get("spec", {}).get("containers", [])
        if not any(c.get("name") == CONTAINER_NAME for c in containers):
            found.append(f"{kind}: must have at least one container named {CONTAINER_NAME}")
        found += [f"{kind}: a container has no image" for c in containers if not c.get("image")]
    return found


def test_the_tfjob_is_one_the_operator_accepts():
    assert problems(tfjob()) == []


def container(job, kind="Worker"):
    return job["spec"]["tfReplicaSpecs"][kind]["template"]["spec"]["containers"][0]


SLIPS = {
    "a misspelt field": (
        lambda j: j["spec"].update(tfReplicaSpec=j["spec"].pop("tfReplicaSpecs")),
        "tfReplicaSpec",
    ),
    "replicas as a string": (
        lambda j: j["spec"]["tfReplicaSpecs"]["Worker"].update(replicas="2"),
        "'2' is not of type 'integer'",
    ),
    "an unknown restart policy": (
        lambda j: j["spec"]["tfReplicaSpecs"]["PS"].update(restartPolicy="OnError"),
        "'OnError' is not one of",
    ),
    "an unknown replica type": (
        lambda j: j["spec"]["tfReplicaSpecs"].update(Ps=j["spec"]["tfReplicaSpecs"].pop("PS")),
        "'Ps' is not one of",
    ),
    "a chief and a master": (
        lambda j: j["spec"]["tfReplicaSpecs"].update(
            Master=copy.deepcopy(j["spec"]["tfReplicaSpecs"]["Chief"])
        ),
        "more than 1 Chief or Master",
    ),
    "the container renamed": (
        lambda j: container(j).update(name="tf"),
        "container named tensorflow",
    ),
    "no image": (lambda j: container(j, "PS").pop("image"), "has no image"),
    "a port as a string": (
        lambda j: container(j)["ports"][0].update(containerPort="2222"),
        "'2222' is not of type 'integer'",
    ),
    "a memory limit in gigabytes, misspelt": (
        lambda j: container(j)["resources"]["limits"].update(memory="2 GB"),
        "does not match",
    ),
    "an env value as a number": (
        lambda j: container(j)["env"][0].update(value=3),
        "3 is not of type 'string'",
    ),
    "a misplaced volume mount": (
        lambda j: container(j)["volumeMounts"][0].update(path="/shared"),
        "'path' was unexpected",
    ),
    "an unknown clean-pod policy": (
        lambda j: j["spec"]["runPolicy"].update(cleanPodPolicy="Finished"),
        "'Finished' is not one of",
    ),
    "an upper-case job name": (lambda j: j["metadata"].update(name="DPKit"), "does not match"),
    "the v1beta2 API": (
        lambda j: j.update(apiVersion="kubeflow.org/v1beta2"),
        "'kubeflow.org/v1' was expected",
    ),
}


@pytest.mark.parametrize("slip", SLIPS)
def test_each_rule_refuses_a_slip(slip):
    change, words = SLIPS[slip]
    job = copy.deepcopy(tfjob())  # the YAML anchors share one pod template: copy it whole
    change(job)
    found = problems(job)
    assert any(words in p for p in found), found
