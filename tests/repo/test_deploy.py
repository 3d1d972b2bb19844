"""deploy/: the Kubernetes manifests start tasks that dpkit.launcher accepts, and fit together.

For every pod the manifests would create, the checks below build what that pod runs (the
``TF_CONFIG`` Kubeflow's training operator sets, or the ``sh -c`` command with the pod's
host name filled in) and hand it to :func:`dpkit.launcher.parse`; the launcher's rules are
never re-implemented here. Then host names, ports, replica counts, Services and the shared
volume are checked against each other. The checkers raise :class:`ManifestError`; the
mutation tests at the end show that they do. No TensorFlow is imported.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
import yaml

from dpkit import launcher
from dpkit.plumbing import contract

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
TASK_COMMAND = ["python", "-m", "dpkit", "task"]
TASK_FLAGS = ("--job_name", "--task_index", "--ps_hosts", "--worker_hosts", "--chief_hosts")
QUIET_TF = contract.QUIET_TENSORFLOW  # what every dpkit child gets (procs.child_env)
# Kubeflow's training operator (kubeflow.org/v1): the container it configures, and the
# port it puts in TF_CONFIG (TFJobDefaultContainerName, TFJobDefaultPortName).
OPERATOR_CONTAINER = "tensorflow"
OPERATOR_PORT_NAME = "tfjob-port"
# statefulset.yaml: the pod label that says which job (chief, ps, worker) a pod runs.
ROLE_LABEL = "app.kubernetes.io/component"
SHARED_MOUNT = "/shared"


class ManifestError(AssertionError):
    """A manifest that would not start the cluster it describes (the message says why)."""


# ----------------------------------------------------------------------------- reading


def load_manifests() -> dict[str, list[dict]]:
    """``{"tfjob.yaml": [document, ...], ...}`` for each deploy/*.yaml, less empty documents."""
    return {
        path.name: [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        for path in sorted(DEPLOY.glob("*.yaml"))
    }


def of_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d.get("kind") == kind]


def named(docs: list[dict], kind: str, name: str) -> dict:
    found = [d for d in of_kind(docs, kind) if d["metadata"]["name"] == name]
    if len(found) != 1:
        raise ManifestError(f"expected one {kind} named {name!r}, found {len(found)}")
    return found[0]


def only_container(pod_spec: dict, where: str, name: str | None = None) -> dict:
    containers = pod_spec.get("containers") or []
    if name is not None:
        containers = [c for c in containers if c.get("name") == name]
    if len(containers) != 1:
        wanted = f" named {name!r}" if name else ""
        raise ManifestError(f"{where}: expected one container{wanted}, found {len(containers)}")
    return containers[0]


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def selects(selector: dict | None, labels: dict | None) -> bool:
    """Whether a selector (a Service's plain map, or a matchLabels one) picks these labels."""
    selector = selector or {}
    if "matchExpressions" in selector:
        raise ManifestError("matchExpressions selectors are beyond these checks")
    wanted = selector.get("matchLabels", selector)
    return bool(wanted) and all((labels or {}).get(k) == v for k, v in wanted.items())


def rwx_claims(manifests: dict[str, list[dict]]) -> set[str]:
    """Names of the ReadWriteMany PersistentVolumeClaims in all the files."""
    return {
        d["metadata"]["name"]
        for docs in manifests.values()
        for d in of_kind(docs, "PersistentVolumeClaim")
        if "ReadWriteMany" in d["spec"].get("accessModes", ())
    }


def shared_mount(pod_spec: dict, container: dict, claims: set[str], where: str) -> str:
    """The mount path of a ReadWriteMany claim in the container (the same volume everywhere)."""
    shared = {
        v["name"]
        for v in pod_spec.get("volumes") or []
        if v.get("persistentVolumeClaim", {}).get("claimName") in claims
    }
    mounts = [m for m in container.get("volumeMounts") or [] if m["name"] in shared]
    if len(mounts) != 1:
        raise ManifestError(
            f"{where}: mounts no ReadWriteMany claim from deploy/ (claims: {sorted(claims)}); "
            "the chief's --logdir must be on storage every pod shares"
        )
    if mounts[0].get("readOnly"):
        raise ManifestError(f"{where}: the shared volume is mounted read-only")
    return mounts[0]["mountPath"]


def check_logdir(task: launcher.Task, mount: str, where: str) -> None:
    logdir = PurePosixPath(task.logdir)
    if (
        not logdir.is_absolute()
        or not logdir.is_relative_to(mount)
        or logdir == PurePosixPath(mount)
    ):
        raise ManifestError(
            f"{where}: --logdir={task.logdir} is not a folder on the shared volume at {mount}"
        )


def parse_task(where: str, args: list[str], environ: dict[str, str]) -> launcher.Task:
    try:
        return launcher.parse(args, environ=environ)
    except launcher.LaunchError as error:
        raise ManifestError(f"{where}: the launcher rejects this task: {error}") from error


def check_same_settings(tasks: dict[str, launcher.Task]) -> None:
    """Every pod sees the same cluster and the same training settings."""
    ignore = {"job", "index", "notes"}
    fields = [f.name for f in dataclasses.fields(launcher.Task) if f.name not in ignore]
    (first, reference), *others = tasks.items()
    for pod, task in others:
        for name in fields:
            if getattr(task, name) != getattr(reference, name):
                raise ManifestError(
                    f"{pod} and {first} disagree on {name}: {getattr(task, name)!r} vs "
                    f"{getattr(reference, name)!r}; every task needs the same settings"
                )


def check_network_policy(docs: list[dict], pods: dict[str, dict]) -> None:
    """A NetworkPolicy lets only the run's own pods reach the (unauthenticated) TF port.

    ``pods`` maps pod names to their labels.
    """
    for pod, labels in pods.items():
        policies = [
            p
            for p in of_kind(docs, "NetworkPolicy")
            if selects(p["spec"].get("podSelector"), labels)
            and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
        ]
        if not policies:
            raise ManifestError(f"{pod}: no NetworkPolicy restricts who reaches its TF server")
        for policy in policies:
            for rule in policy["spec"].get("ingress") or []:
                peers = rule.get("from") or []
                if not peers:
                    raise ManifestError(
                        f"NetworkPolicy {policy['metadata']['name']}: an ingress rule without "
                        "'from' admits every source"
                    )
                for peer in peers:
                    if set(peer) != {"podSelector"} or not all(
                        selects(peer["podSelector"], other) for other in pods.values()
                    ):
                        raise ManifestError(
                            f"NetworkPolicy {policy['metadata']['name']}: ingress peer {peer} "
                            "is not a podSelector that picks every pod of the run"
                        )


# ----------------------------------------------------------------------------- TFJob


def operator_tf_config(tfjob: dict, replica_type: str, index: int, namespace: str) -> str:
    """``TF_CONFIG`` as Kubeflow's training operator (v1) sets it in a TFJob's pod.

    As in the operator's ``genTFConfigJSONStr``/``genClusterSpec``
    (pkg/controller.v1/tensorflow/tensorflow.go): one job per replica type, named by the
    type in lower case ("Chief" -> "chief", "PS" -> "ps"); task ``i`` of type ``T`` in TFJob
    ``J`` is ``"J-t-i.<namespace>.svc:<port>"``, the name of the headless Service the
    operator makes for that pod (".<cluster domain>" is appended when the operator runs with
    CUSTOM_CLUSTER_DOMAIN set); the port is the containerPort named "tfjob-port" of the
    container named "tensorflow" (2222 if there is none); and an "environment": "cloud".
    """
    name = tfjob["metadata"]["name"]
    cluster = {}
    for rtype, spec in tfjob["spec"]["tfReplicaSpecs"].items():
        container = only_container(spec["template"]["spec"], rtype, OPERATOR_CONTAINER)
        ports = [p for p in container.get("ports") or [] if p.get("name") == OPERATOR_PORT_NAME]
        port = ports[0]["containerPort"] if ports else 2222
        job = rtype.lower()
        cluster[job] = [
            f"{name}-{job}-{i}.{namespace}.svc:{port}" for i in range(spec.get("replicas", 1))
        ]
    task = {"type": replica_type.lower(), "index": index}
    return json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})


def check_tfjob(docs: list[dict], claims: set[str]) -> dict[str, launcher.Task]:
    """Check the TFJob in ``docs``; return ``{pod name: Task}`` for each of its pods."""
    jobs = of_kind(docs, "TFJob")
    if len(jobs) != 1:
        raise ManifestError(f"expected one TFJob, found {len(jobs)}")
    tfjob = jobs[0]
    if tfjob.get("apiVersion") != "kubeflow.org/v1":
        raise ManifestError(f"TFJob apiVersion {tfjob.get('apiVersion')!r}, not kubeflow.org/v1")
    name = tfjob["metadata"]["name"]
    if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name) or len(name) > 63:
        raise ManifestError(f"TFJob name {name!r} is not a DNS-1035 label (the operator's rule)")
    namespace = tfjob["metadata"].get("namespace", "default")
    tasks, labels = {}, {}
    for rtype, spec in tfjob["spec"]["tfReplicaSpecs"].items():
        pod_spec = spec["template"]["spec"]
        container = only_container(pod_spec, rtype, OPERATOR_CONTAINER)
        ports = [p for p in container.get("ports") or [] if p.get("name") == OPERATOR_PORT_NAME]
        if [p["containerPort"] for p in ports] != [launcher.PORT]:
            raise ManifestError(
                f"{rtype}: the container needs one port named {OPERATOR_PORT_NAME} with "
                f"containerPort {launcher.PORT}, found {ports}"
            )
        command = list(container.get("command") or []) + list(container.get("args") or [])
        if command[: len(TASK_COMMAND)] != TASK_COMMAND:
            raise ManifestError(f"{rtype}: the command {command} does not start {TASK_COMMAND}")
        args = command[len(TASK_COMMAND) :]
        flags = [a for a in args if a.split("=", 1)[0] in TASK_FLAGS]
        if flags:
            raise ManifestError(
                f"{rtype}: {flags} in the command would win over the operator's TF_CONFIG"
            )
        env = env_of(container)
        if "TF_CONFIG" in env:
            raise ManifestError(f"{rtype}: sets TF_CONFIG itself; the operator sets it")
        for variable, value in QUIET_TF.items():
            if env.get(variable) != value:
                raise ManifestError(f"{rtype}: env {variable} should be {value!r}")
        mount = shared_mount(pod_spec, container, claims, rtype)
        for index in range(spec.get("replicas", 1)):
            pod = f"{name}-{rtype.lower()}-{index}"
            config = operator_tf_config(tfjob, rtype, index, namespace)
            task = parse_task(pod, args, {"TF_CONFIG": config})
            if (task.source, task.job, task.index) != ("TF_CONFIG", rtype.lower(), index):
                raise ManifestError(
                    f"{pod}: the launcher took it for {task.name} from {task.source}"
                )
            if task.is_chief != (rtype == "Chief"):
                raise ManifestError(
                    f"{pod}: is_chief={task.is_chief}, but the job's success follows the "
                    "Chief replica, so the launcher's chief must be the Chief pod"
                )
            check_logdir(task, mount, pod)
            tasks[pod] = task
            labels[pod] = spec["template"].get("metadata", {}).get("labels", {})
    check_same_settings(tasks)
    check_network_policy(docs, labels)
    return tasks


# ----------------------------------------------------------------------------- StatefulSets


@dataclasses.dataclass
class Workload:
    """A StatefulSet, or an Indexed Job: pods with the host names ``<name>-<i>``."""

    kind: str
    name: str
    replicas: int
    service: str  # the pods' subdomain: they resolve as <name>-<i>.<service>
    template: dict

    @property
    def hostnames(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.replicas)]

    @property
    def labels(self) -> dict:
        return self.template.get("metadata", {}).get("labels", {})

    @property
    def container(self) -> dict:
        return only_container(self.template["spec"], self.name)

    @property
    def ports(self) -> list[int]:
        return [p["containerPort"] for p in self.container.get("ports") or []]


def workloads(docs: list[dict]) -> list[Workload]:
    found = []
    for sts in of_kind(docs, "StatefulSet"):
        spec, name = sts["spec"], sts["metadata"]["name"]
        if not selects(spec["selector"], spec["template"]["metadata"]["labels"]):
            raise ManifestError(f"StatefulSet {name}: its selector misses its own pods")
        found.append(
            Workload(
                "StatefulSet", name, spec.get("replicas", 1), spec["serviceName"], spec["template"]
            )
        )
    for job in of_kind(docs, "Job"):
        spec, name = job["spec"], job["metadata"]["name"]
        if spec.get("completionMode") != "Indexed":
            raise ManifestError(
                f"Job {name}: not completionMode Indexed, so its pods' host names are random "
                "and no --*_hosts entry can name them"
            )
        completions = spec.get("completions", 1)
        if spec.get("parallelism", 1) != completions:
            raise ManifestError(f"Job {name}: parallelism must equal completions (all at once)")
        subdomain = spec["template"]["spec"].get("subdomain")
        if not subdomain:
            raise ManifestError(f"Job {name}: no subdomain, so its pods have no DNS name")
        found.append(Workload("Job", name, completions, subdomain, spec["template"]))
    for w in found:
        if "hostname" in w.template["spec"]:
            raise ManifestError(f"{w.kind} {w.name}: a fixed hostname gives every pod one name")
    return found


def expand_shell(command: list[str], hostname: str) -> list[str]:
    """The argv that ``sh -c SCRIPT`` execs in the pod with this host name.

    Only ``${HOSTNAME##*-}`` (the text after the last "-"), ``${HOSTNAME}`` and
    ``$HOSTNAME`` are expanded; anything else the shell would expand is refused.
    """
    if len(command) != 3 or command[:2] != ["sh", "-c"]:
        raise ManifestError(f"expected the command ['sh', '-c', SCRIPT], got {command}")
    script = command[2]
    if "$(" in script:
        raise ManifestError(
            f"{script!r}: Kubernetes expands $(NAME) itself before sh sees it; use ${{NAME}}"
        )
    script = script.replace("${HOSTNAME##*-}", hostname.rsplit("-", 1)[-1])
    script = script.replace("${HOSTNAME}", hostname)
    script = re.sub(r"\$HOSTNAME(?![A-Za-z0-9_])", hostname, script)
    if re.search(r"[$`\\;&|<>(){}*?[~]", script):
        raise ManifestError(f"{script!r}: shell syntax these checks cannot follow")
    words = shlex.split(script)
    if words[:1] != ["exec"]:
        raise ManifestError(f"{script!r}: start with exec, so that the task gets the signals")
    return words[1:]


def resolve(address: str, by_hostname: dict[str, Workload]) -> tuple[Workload, str, int]:
    """``"dpkit-worker-1.dpkit-worker:2222"`` -> (its workload, its host name, 2222).

    A pod's DNS name is ``<host name>.<subdomain>``, optionally followed by
    ``.<namespace>.svc`` and the cluster domain.
    """
    host, _, port = address.rpartition(":")
    hostname, _, domain = host.partition(".")
    workload = by_hostname.get(hostname)
    if workload is None:
        raise ManifestError(f"{address}: no pod has the host name {hostname!r}")
    service, _, rest = domain.partition(".")
    if service != workload.service or not re.fullmatch(r"([a-z0-9-]+\.svc(\..+)?)?", rest):
        raise ManifestError(
            f"{address}: the pod {hostname} is reachable as {hostname}.{workload.service} "
            f"(its {'serviceName' if workload.kind == 'StatefulSet' else 'subdomain'}), "
            f"not as {host}"
        )
    return workload, hostname, int(port)


def check_statefulsets(docs: list[dict], claims: set[str]) -> dict[str, launcher.Task]:
    """Check the Services and workloads in ``docs``; return ``{host name: Task}`` per pod."""
    services = {s["metadata"]["name"]: s for s in of_kind(docs, "Service")}
    found = workloads(docs)
    if not found:
        raise ManifestError("no StatefulSet or Indexed Job")
    by_hostname = {h: w for w in found for h in w.hostnames}
    tasks = {}
    for w in found:
        service = services.get(w.service)
        if service is None:
            raise ManifestError(f"{w.kind} {w.name}: no Service named {w.service!r}")
        if service["spec"].get("clusterIP") != "None":
            raise ManifestError(f"Service {w.service}: not headless (clusterIP: None)")
        if not selects(service["spec"].get("selector"), w.labels):
            raise ManifestError(f"Service {w.service}: its selector misses the pods of {w.name}")
        env = env_of(w.container)
        for variable, value in QUIET_TF.items():
            if env.get(variable) != value:
                raise ManifestError(f"{w.name}: env {variable} should be {value!r}")
        mount = shared_mount(w.template["spec"], w.container, claims, w.name)
        for index, hostname in enumerate(w.hostnames):
            words = expand_shell(w.container.get("command") or [], hostname)
            if words[: len(TASK_COMMAND)] != TASK_COMMAND:
                raise ManifestError(f"{hostname}: {words} does not start {TASK_COMMAND}")
            task = parse_task(hostname, words[len(TASK_COMMAND) :], environ={})
            role = w.labels.get(ROLE_LABEL)
            if (task.job, task.index) != (role, index):
                raise ManifestError(
                    f"{hostname}: runs {task.name}, but it is pod {index} of {w.name} "
                    f"({ROLE_LABEL}: {role})"
                )
            check_logdir(task, mount, hostname)
            tasks[hostname] = task
    check_same_settings(tasks)
    cluster = next(iter(tasks.values())).cluster
    for w in found:  # each role's pods are exactly its host list
        role = w.labels.get(ROLE_LABEL)
        if w.replicas != len(cluster.get(role, ())):
            raise ManifestError(
                f"{w.kind} {w.name}: {w.replicas} replicas, but {len(cluster.get(role, ()))} "
                f"{role} addresses in --{role}_hosts"
            )
    for job, addresses in cluster.items():
        for index, address in enumerate(addresses):
            workload, hostname, port = resolve(address, by_hostname)
            task = tasks[hostname]
            if (task.job, task.index) != (job, index):
                raise ManifestError(
                    f"{address} is {job}:{index} in the host lists, but that pod runs {task.name}"
                )
            if port not in workload.ports:
                raise ManifestError(
                    f"{address}: {workload.name}'s container exposes {workload.ports}, not {port}"
                )
            service = services[workload.service]
            if not any(
                p.get("port") == port and p.get("targetPort", port) == port
                for p in service["spec"].get("ports") or []
            ):
                raise ManifestError(
                    f"{address}: Service {workload.service} has no port {port} -> {port}"
                )
    check_network_policy(docs, {h: by_hostname[h].labels for h in tasks})
    return tasks


# ----------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def pristine() -> dict[str, list[dict]]:
    return load_manifests()


@pytest.fixture
def manifests(pristine) -> dict[str, list[dict]]:
    return copy.deepcopy(pristine)


def test_every_document_is_a_named_kubernetes_object(manifests):
    assert {"tfjob.yaml", "statefulset.yaml", "pvc.yaml"} <= set(manifests)
    seen = set()
    for file, docs in manifests.items():
        assert docs, file
        for d in docs:
            assert {"apiVersion", "kind", "metadata"} <= set(d), (file, d)
            key = (d["kind"], d["metadata"]["name"])
            assert key not in seen, f"{key} is defined twice: kubectl apply would clash"
            seen.add(key)


def test_shared_claim_is_read_write_many(manifests):
    assert rwx_claims(manifests) == {"dpkit-runs"}


def test_tfjob_runs_chief_ps_and_two_workers(manifests):
    claims = rwx_claims(manifests)
    tasks = check_tfjob(manifests["tfjob.yaml"], claims)
    assert {pod: task.name for pod, task in tasks.items()} == {
        "dpkit-chief-0": "chief:0",
        "dpkit-ps-0": "ps:0",
        "dpkit-worker-0": "worker:0",
        "dpkit-worker-1": "worker:1",
    }
    assert {task.flavour for task in tasks.values()} == {"ps_strategy"}
    assert [pod for pod, task in tasks.items() if task.is_chief] == ["dpkit-chief-0"]
    assert tasks["dpkit-worker-1"].address == "dpkit-worker-1.default.svc:2222"
    assert tasks["dpkit-chief-0"].logdir.startswith(SHARED_MOUNT + "/")

    [tfjob] = of_kind(manifests["tfjob.yaml"], "TFJob")
    specs = tfjob["spec"]["tfReplicaSpecs"]
    assert {t: s["replicas"] for t, s in specs.items()} == {"Chief": 1, "PS": 1, "Worker": 2}
    # a crashed server comes back; a failed chief ends the job (see the comment in the file)
    assert {t: s["restartPolicy"] for t, s in specs.items()} == {
        "Chief": "Never",
        "PS": "OnFailure",
        "Worker": "OnFailure",
    }
    assert "successPolicy" not in tfjob["spec"]  # the default: the chief decides
    for spec in specs.values():
        container = only_container(spec["template"]["spec"], "", OPERATOR_CONTAINER)
        assert container["command"][:4] == TASK_COMMAND
        mount = shared_mount(spec["template"]["spec"], container, claims, "")
        assert mount == SHARED_MOUNT


def test_tfjob_in_another_namespace(manifests):
    docs = manifests["tfjob.yaml"]
    of_kind(docs, "TFJob")[0]["metadata"]["namespace"] = "team-a"
    tasks = check_tfjob(docs, rwx_claims(manifests))
    assert tasks["dpkit-ps-0"].cluster["ps"] == ["dpkit-ps-0.team-a.svc:2222"]


def test_statefulsets_run_chief_ps_and_two_workers(manifests):
    tasks = check_statefulsets(manifests["statefulset.yaml"], rwx_claims(manifests))
    assert {pod: task.name for pod, task in tasks.items()} == {
        "dpkit-chief-0": "chief:0",
        "dpkit-ps-0": "ps:0",
        "dpkit-worker-0": "worker:0",
        "dpkit-worker-1": "worker:1",
    }
    task = tasks["dpkit-worker-1"]
    assert task.source == "flags"
    assert task.flavour == "ps_strategy"
    assert task.cluster == {
        "chief": ["dpkit-chief-0.dpkit-chief:2222"],
        "ps": ["dpkit-ps-0.dpkit-ps:2222"],
        "worker": ["dpkit-worker-0.dpkit-worker:2222", "dpkit-worker-1.dpkit-worker:2222"],
    }
    assert [pod for pod, t in tasks.items() if t.is_chief] == ["dpkit-chief-0"]
    assert {a.rpartition(":")[2] for a in task.peers().values()} == {str(launcher.PORT)}
    docs = manifests["statefulset.yaml"]
    kinds = {(w.kind, w.name) for w in workloads(docs)}
    assert kinds == {
        ("Job", "dpkit-chief"),
        ("StatefulSet", "dpkit-ps"),
        ("StatefulSet", "dpkit-worker"),
    }
    for sts in of_kind(docs, "StatefulSet"):  # servers start together and wait for each other
        assert sts["spec"]["podManagementPolicy"] == "Parallel"


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")
def test_expand_shell_agrees_with_sh(manifests, tmp_path):
    """The expansion above is what sh itself does with the pods' commands."""
    fake = tmp_path / "python"  # prints the arguments it was exec'd with
    fake.write_text("#!/bin/sh\nprintf '%s\\n' python \"$@\"\n")
    fake.chmod(0o755)
    for w in workloads(manifests["statefulset.yaml"]):
        for hostname in w.hostnames:
            command = w.container["command"]
            env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOSTNAME": hostname}
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            assert out.stdout.splitlines() == expand_shell(command, hostname)


def test_tensorboard_reads_both_runs(manifests):
    claims = rwx_claims(manifests)
    [pod] = of_kind(manifests["tensorboard.yaml"], "Pod")
    container = only_container(pod["spec"], "tensorboard")
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] in mounts]
    assert volume["persistentVolumeClaim"]["claimName"] in claims
    [logdir] = [a.split("=", 1)[1] for a in container["command"] if a.startswith("--logdir=")]
    assert "--bind_all" not in container["command"]  # localhost only: port-forward reaches it
    runs = [
        *check_tfjob(manifests["tfjob.yaml"], claims).values(),
        *check_statefulsets(manifests["statefulset.yaml"], claims).values(),
    ]
    for task in runs:
        assert PurePosixPath(task.logdir).is_relative_to(logdir), task.logdir
    assert mounts[volume["name"]] == SHARED_MOUNT


def test_dockerfile_installs_an_extra_that_exists():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the test extra installs tomli on 3.10
        import tomli as tomllib
    project = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    installed = re.findall(r"pip install \"[^\"\[]*\[([a-z,]+)\]\"", dockerfile)
    assert installed, "the Dockerfile pip-installs no dpkit[extra]"
    for extra in installed[0].split(","):
        assert extra in extras, extra
    assert project["project"]["readme"] in dockerfile  # pip needs it to build the package
    assert re.search(r"^USER 1000$", dockerfile, re.MULTILINE)  # = the pods' runAsUser


# ----------------------------------------------------------------------------- they can fail


def _tfjob(m):
    return of_kind(m["tfjob.yaml"], "TFJob")[0]


def _tf_container(m, rtype="Worker"):
    spec = _tfjob(m)["spec"]["tfReplicaSpecs"][rtype]["template"]["spec"]
    return spec["containers"][0]


def _set(m, kind, name, path, value):
    node = named(m["statefulset.yaml"], kind, name)
    *parents, last = path
    for key in parents:
        node = node[key]
    node[last] = value


def _script(m, name, old, new):
    """Edit the sh -c script of one workload (name) or of all (None)."""
    for d in m["statefulset.yaml"]:
        if d["kind"] in ("StatefulSet", "Job") and name in (None, d["metadata"]["name"]):
            command = d["spec"]["template"]["spec"]["containers"][0]["command"]
            assert old in command[2], (old, command[2])
            command[2] = command[2].replace(old, new)


def _sts_container(m, name):
    return named(m["statefulset.yaml"], "StatefulSet", name)["spec"]["template"]["spec"][
        "containers"
    ][0]


TFJOB_MUTATIONS = {
    "port not 2222": (
        lambda m: _tf_container(m)["ports"][0].update(containerPort=2223),
        "containerPort 2222",
    ),
    "port not named tfjob-port": (
        lambda m: _tf_container(m)["ports"][0].update(name="grpc"),
        "named tfjob-port",
    ),
    "container not named tensorflow": (
        lambda m: _tf_container(m).update(name="main"),
        "container named 'tensorflow'",
    ),
    "task flag in the command": (
        lambda m: _tf_container(m)["command"].append("--job_name=worker"),
        "would win over",
    ),
    "Master instead of Chief": (
        lambda m: _tfjob(m)["spec"]["tfReplicaSpecs"].update(
            Master=_tfjob(m)["spec"]["tfReplicaSpecs"].pop("Chief")
        ),
        "launcher rejects",
    ),
    "a bad training flag": (
        lambda m: _tf_container(m)["command"].append("--train_steps=0"),
        "launcher rejects",
    ),
    "logdir off the shared volume": (
        lambda m: _tf_container(m)["command"].append("--logdir=/tmp/runs"),
        "not a folder on the shared volume",
    ),
    "shared volume not mounted": (
        lambda m: _tf_container(m)["volumeMounts"].clear(),
        "mounts no ReadWriteMany claim",
    ),
    "TF2 command without the task word": (
        lambda m: _tf_container(m)["command"].remove("task"),
        "does not start",
    ),
    "open network policy": (
        lambda m: named(m["tfjob.yaml"], "NetworkPolicy", "dpkit-tfjob")["spec"]["ingress"][0].pop(
            "from"
        ),
        "admits every source",
    ),
}


@pytest.mark.parametrize("mutation", TFJOB_MUTATIONS)
def test_tfjob_checker_catches(manifests, mutation):
    mutate, message = TFJOB_MUTATIONS[mutation]
    mutate(manifests)  # (PS and Worker share the Chief's pod through a YAML alias)
    with pytest.raises(ManifestError, match=message):
        check_tfjob(manifests["tfjob.yaml"], rwx_claims(manifests))


STATEFULSET_MUTATIONS = {
    "more worker replicas than hosts": (
        lambda m: _set(m, "StatefulSet", "dpkit-worker", ["spec", "replicas"], 3),
        "out of range",
    ),
    "fewer worker replicas than hosts": (
        lambda m: _set(m, "StatefulSet", "dpkit-worker", ["spec", "replicas"], 1),
        "1 replicas, but 2 worker addresses",
    ),
    "typo in a host name everywhere": (
        lambda m: _script(m, None, "dpkit-worker-1.dpkit-worker", "dpkit-wroker-1.dpkit-worker"),
        "no pod has the host name 'dpkit-wroker-1'",
    ),
    "typo in a host name on one pod": (
        lambda m: _script(m, "dpkit-ps", "dpkit-worker-1.dpkit-worker", "dpkit-worker-1.worker"),
        "disagree on cluster",
    ),
    "host under the wrong service": (
        lambda m: _script(m, None, "dpkit-ps-0.dpkit-ps", "dpkit-ps-0.dpkit-worker"),
        "reachable as dpkit-ps-0.dpkit-ps",
    ),
    "worker hosts swapped": (
        lambda m: _script(
            m,
            None,
            "dpkit-worker-0.dpkit-worker:2222,dpkit-worker-1.dpkit-worker:2222",
            "dpkit-worker-1.dpkit-worker:2222,dpkit-worker-0.dpkit-worker:2222",
        ),
        "is worker:0 in the host lists",
    ),
    "address port differs from the container's": (
        lambda m: _script(m, None, "dpkit-ps-0.dpkit-ps:2222", "dpkit-ps-0.dpkit-ps:2223"),
        "exposes \\[2222\\], not 2223",
    ),
    "containerPort differs": (
        lambda m: _sts_container(m, "dpkit-worker")["ports"][0].update(containerPort=2223),
        "exposes \\[2223\\], not 2222",
    ),
    "Service port differs": (
        lambda m: _set(m, "Service", "dpkit-worker", ["spec", "ports"], [{"port": 2223}]),
        "no port 2222",
    ),
    "Service not headless": (
        lambda m: named(m["statefulset.yaml"], "Service", "dpkit-ps")["spec"].pop("clusterIP"),
        "not headless",
    ),
    "Service selects other pods": (
        lambda m: _set(m, "Service", "dpkit-ps", ["spec", "selector", ROLE_LABEL], "worker"),
        "selector misses the pods of dpkit-ps",
    ),
    "serviceName without a Service": (
        lambda m: _set(m, "StatefulSet", "dpkit-worker", ["spec", "serviceName"], "workers"),
        "no Service named 'workers'",
    ),
    "chief Job not indexed": (
        lambda m: named(m["statefulset.yaml"], "Job", "dpkit-chief")["spec"].pop("completionMode"),
        "host names are random",
    ),
    "role label and job name disagree": (
        lambda m: _script(m, "dpkit-ps", "--job_name=ps", "--job_name=worker"),
        "runs worker:0, but it is pod 0 of dpkit-ps",
    ),
    "index from a Kubernetes $(...)": (
        lambda m: _script(m, "dpkit-worker", "${HOSTNAME##*-}", "$(HOSTNAME)"),
        "Kubernetes expands",
    ),
    "index is the whole host name": (
        lambda m: _script(m, "dpkit-worker", "${HOSTNAME##*-}", "${HOSTNAME}"),
        "launcher rejects",
    ),
    "no exec": (
        lambda m: _script(m, "dpkit-worker", "exec python", "python"),
        "start with exec",
    ),
    "logdir differs on one pod": (
        lambda m: _script(m, "dpkit-worker", "/shared/runs/cluster", "/shared/runs/other"),
        "disagree on logdir",
    ),
    "no shared volume": (
        lambda m: _sts_container(m, "dpkit-ps")["volumeMounts"].clear(),
        "mounts no ReadWriteMany claim",
    ),
    "no network policy": (
        lambda m: m["statefulset.yaml"].remove(
            named(m["statefulset.yaml"], "NetworkPolicy", "dpkit-cluster")
        ),
        "no NetworkPolicy",
    ),
}


@pytest.mark.parametrize("mutation", STATEFULSET_MUTATIONS)
def test_statefulset_checker_catches(manifests, mutation):
    mutate, message = STATEFULSET_MUTATIONS[mutation]
    mutate(manifests)
    with pytest.raises(ManifestError, match=message):
        check_statefulsets(manifests["statefulset.yaml"], rwx_claims(manifests))


def test_mutations_work_on_copies(pristine):
    assert pristine == load_manifests()
