"""What Kubeflow's training operator v1.9.0 accepts as a ``kubeflow.org/v1`` TFJob, as a JSON
Schema that :mod:`jsonschema` checks offline (tests/repo/test_tfjob_schema.py).

Written here from two sources of kubeflow/training-operator at tag v1.9.0 (commit 6f74c7f6b2ed,
the last release of the v1 operator; the v1 code left main in 7858371b4): the CRD's
openAPIV3Schema (manifests/base/crds/kubeflow.org_tfjobs.yaml) for the fields, their types and
what they require, and the admission webhook (pkg/webhooks/tensorflow/tfjob_webhook.go) for the
rules a schema cannot state. The CRD itself is not copied into this repository; this is the
part of it that deploy/tfjob.yaml reaches, written out: each object below lists every field
name the CRD gives it, so a misspelt field is refused, as ``kubectl apply --validate=strict``
refuses it (without strict validation the API server drops an unknown field, at most with a
warning). Fields this repository does not set are accepted, unchecked below them. Two enums
are the API's Go constants, not the CRD's (which says only "string"): restartPolicy and
cleanPodPolicy, and imagePullPolicy and protocol are Kubernetes' own pod validation.
"""

from __future__ import annotations

ANY: dict = {}
INT = {"type": "integer"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
STR_MAP = {"type": "object", "additionalProperties": STR}
# resource quantities ("500m", "1Gi", 2): the CRD's int-or-string with Kubernetes' pattern
QUANTITY = {
    "anyOf": [INT, STR],
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
}


def closed(required=(), **fields) -> dict:
    """An object with exactly these field names (the CRD's), ``required`` among them."""
    return {
        "type": "object",
        "properties": fields,
        "additionalProperties": False,
        **({"required": list(required)} if required else {}),
    }


def names(text: str) -> dict:
    """Fields this repository does not set: accepted, not checked further."""
    return dict.fromkeys(text.split(), ANY)


SECCOMP = closed(["type"], type=STR, localhostProfile=STR)
CONTAINER = closed(
    ["name"],
    name=STR,
    image=STR,
    imagePullPolicy={"enum": ["Always", "IfNotPresent", "Never"]},
    command={"type": "array", "items": STR},
    args={"type": "array", "items": STR},
    env={"type": "array", "items": closed(["name"], name=STR, value=STR, valueFrom=ANY)},
    ports={
        "type": "array",
        "items": closed(
            ["containerPort"],
            containerPort={"type": "integer", "minimum": 1, "maximum": 65535},
            name=STR,
            protocol={"enum": ["TCP", "UDP", "SCTP"]},
            hostIP=STR,
            hostPort=INT,
        ),
    },
    resources=closed(
        limits={"type": "object", "additionalProperties": QUANTITY},
        requests={"type": "object", "additionalProperties": QUANTITY},
        claims=ANY,
    ),
    securityContext=closed(
        allowPrivilegeEscalation=BOOL,
        capabilities=closed(
            add={"type": "array", "items": STR}, drop={"type": "array", "items": STR}
        ),
        seccompProfile=SECCOMP,
        runAsNonRoot=BOOL,
        runAsUser=INT,
        runAsGroup=INT,
        **names("appArmorProfile privileged procMount readOnlyRootFilesystem seLinuxOptions"),
        **names("windowsOptions"),
    ),
    volumeMounts={
        "type": "array",
        "items": closed(
            ["name", "mountPath"],
            name=STR,
            mountPath=STR,
            readOnly=BOOL,
            subPath=STR,
            **names("mountPropagation recursiveReadOnly subPathExpr"),
        ),
    },
    **names("envFrom lifecycle livenessProbe readinessProbe resizePolicy restartPolicy"),
    **names("startupProbe stdin stdinOnce terminationMessagePath terminationMessagePolicy"),
    **names("tty volumeDevices workingDir"),
)
POD_SPEC = closed(
    ["containers"],
    containers={"type": "array", "minItems": 1, "items": CONTAINER},
    automountServiceAccountToken=BOOL,
    securityContext=closed(
        runAsNonRoot=BOOL,
        runAsUser=INT,
        runAsGroup=INT,
        fsGroup=INT,
        seccompProfile=SECCOMP,
        **names("appArmorProfile fsGroupChangePolicy seLinuxOptions supplementalGroups"),
        **names("supplementalGroupsPolicy sysctls windowsOptions"),
    ),
    volumes={
        "type": "array",
        "items": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": STR,
                "persistentVolumeClaim": closed(["claimName"], claimName=STR, readOnly=BOOL),
            },
        },
    },
    **names("activeDeadlineSeconds affinity dnsConfig dnsPolicy enableServiceLinks"),
    **names("ephemeralContainers hostAliases hostIPC hostNetwork hostPID hostUsers hostname"),
    **names("imagePullSecrets initContainers nodeName nodeSelector os overhead"),
    **names("preemptionPolicy priority priorityClassName readinessGates resourceClaims"),
    **names("restartPolicy runtimeClassName schedulerName schedulingGates serviceAccount"),
    **names("serviceAccountName setHostnameAsFQDN shareProcessNamespace subdomain"),
    **names("terminationGracePeriodSeconds tolerations topologySpreadConstraints"),
)
REPLICA = closed(
    [],
    replicas={"type": "integer", "minimum": 0},
    # common_types.go: "One of Always, OnFailure, Never and ExitCode"
    restartPolicy={"enum": ["Always", "OnFailure", "Never", "ExitCode"]},
    template=closed(
        metadata=closed(
            labels=STR_MAP,
            annotations=STR_MAP,
            name=STR,
            namespace=STR,
            finalizers={"type": "array", "items": STR},
        ),
        spec=POD_SPEC,
    ),
)
# tensorflow_types.go: the replica types; the webhook allows one Chief or Master (checked in
# the test) and needs a container named "tensorflow" with an image in every replica type.
REPLICA_TYPES = ["Chief", "Master", "PS", "Worker", "Evaluator"]
TFJOB = closed(
    ["apiVersion", "kind", "metadata", "spec"],
    apiVersion={"const": "kubeflow.org/v1"},
    kind={"const": "TFJob"},
    metadata={
        "type": "object",
        "required": ["name"],
        # the webhook: metadata.name must be a DNS-1035 label
        "properties": {"name": {"type": "string", "pattern": "^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"}},
    },
    status=ANY,
    spec=closed(
        ["tfReplicaSpecs"],
        tfReplicaSpecs={
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"enum": REPLICA_TYPES},
            "additionalProperties": REPLICA,
        },
        runPolicy=closed(
            activeDeadlineSeconds=INT,
            backoffLimit=INT,
            # common_types.go: CleanPodPolicyAll, Running, None
            cleanPodPolicy={"enum": ["All", "Running", "None"]},
            ttlSecondsAfterFinished=INT,
            suspend=BOOL,
            **names("managedBy schedulingPolicy"),
        ),
        # tensorflow_types.go: SuccessPolicyDefault "" and SuccessPolicyAllWorkers
        successPolicy={"enum": ["", "AllWorkers"]},
        enableDynamicWorker=BOOL,
    ),
)
