"""What the Zero to JupyterHub Helm chart, jupyterhub 4.4.0, accepts as values, for the keys
deploy/jupyterhub/config.yaml sets: a JSON Schema (draft 7, as the chart's) that
:mod:`jsonschema` checks offline (tests/repo/test_jupyterhub_config.py).

Written here from jupyterhub/values.schema.yaml of jupyterhub/zero-to-jupyterhub-k8s at tag
4.4.0 (commit 5c5f5df75158, 10 June 2026: JupyterHub 5.5.0, KubeSpawner 7.0.0, idle culler
1.4.0). ``helm install`` and ``helm upgrade`` check the values against that schema, packaged
with the chart as values.schema.json, before they render anything. The schema itself is not
copied into this repository: this is the part of it that config.yaml reaches. Each object
below lists every key name the chart's schema gives it and refuses any other, as the
chart's ``additionalProperties: false`` makes helm do (the top level, hub, singleuser, cull
and every object under singleuser here; hub.extraConfig is open, as in the chart): a
misspelt key fails the install. Keys config.yaml does not set are accepted, unchecked below
them. Types and enums are the chart's.

One difference, on purpose: the chart's ``required`` lists are left out, except for each
file of singleuser.extraFiles. Helm checks the values after merging them over the chart's
own values.yaml, which sets every other required key (image.tag, storage.type,
cull.enabled...); this file checks config.yaml alone.
"""

from __future__ import annotations

ANY: dict = {}
BOOL = {"type": "boolean"}
STR = {"type": "string"}
OPT_BOOL = {"type": ["boolean", "null"]}
OPT_INT = {"type": ["integer", "null"]}
OPT_STR = {"type": ["string", "null"]}


def closed(**fields) -> dict:
    """An object with exactly these key names (``additionalProperties: false`` in the chart)."""
    return {"type": "object", "properties": fields, "additionalProperties": False}


def names(text: str) -> dict:
    """Keys config.yaml does not set: accepted, not checked further."""
    return dict.fromkeys(text.split(), ANY)


IMAGE = closed(
    name=STR,
    tag=STR,
    pullPolicy={"enum": [None, "", "IfNotPresent", "Always", "Never"]},
    pullSecrets={"type": "array"},
)

# Bytes as JupyterHub reads them (a number, or a string the test parses further).
MEMORY = closed(
    limit={"type": ["number", "string", "null"]},
    guarantee={"type": ["number", "string", "null"]},
)

NETWORK_POLICY = closed(
    enabled=BOOL,
    ingress={"type": "array"},
    egress={"type": "array"},
    egressAllowRules=closed(
        cloudMetadataServer=BOOL,
        dnsPortsCloudMetadataServer=BOOL,
        dnsPortsKubeSystemNamespace=BOOL,
        dnsPortsPrivateIPs=BOOL,
        nonPrivateIPs=BOOL,
        privateIPs=BOOL,
    ),
    interNamespaceAccessLabels={"enum": ["accept", "ignore"]},
    allowedIngressPorts={"type": "array"},
)

STORAGE = closed(
    capacity=OPT_STR,
    extraVolumeMounts={"type": ["object", "array", "null"]},
    extraVolumes={"type": ["object", "array", "null"]},
    homeMountPath=STR,
    type={"enum": ["dynamic", "static", "none"]},
    **names("dynamic extraLabels static"),
)

# singleuser.extraFiles: any key, each a file with a mount path and exactly one of data,
# stringData, binaryData.
EXTRA_FILES = {
    "type": "object",
    "additionalProperties": False,
    "patternProperties": {
        ".*": {
            **closed(
                mountPath=STR,
                data={"type": "object", "additionalProperties": True},
                stringData=STR,
                binaryData=STR,
                mode={"type": "number"},
            ),
            "required": ["mountPath"],
            "oneOf": [
                {"required": ["data"]},
                {"required": ["stringData"]},
                {"required": ["binaryData"]},
            ],
        }
    },
}

SINGLEUSER = closed(
    image=IMAGE,
    memory=MEMORY,
    networkPolicy=NETWORK_POLICY,
    storage=STORAGE,
    extraFiles=EXTRA_FILES,
    uid=OPT_INT,
    fsGid=OPT_INT,
    **names(
        "podNameTemplate cpu initContainers profileList extraEnv nodeSelector extraTolerations "
        "extraNodeAffinity extraPodAffinity extraPodAntiAffinity cloudMetadata cmd defaultUrl "
        "events extraAnnotations extraContainers extraLabels extraPodConfig extraResource "
        "lifecycleHooks networkTools serviceAccountName startTimeout allowPrivilegeEscalation"
    ),
)

HUB = closed(
    # Python run by the hub's jupyterhub_config.py, each value a snippet (the chart types the
    # mapping only; the test compiles and runs each value).
    extraConfig={"type": "object", "additionalProperties": True},
    **names(
        "revisionHistoryLimit config extraFiles baseUrl command args cookieSecret image "
        "networkPolicy db labels initContainers extraEnv fsGid service pdb existingSecret "
        "nodeSelector tolerations activeServerLimit allowNamedServers annotations "
        "authenticatePrometheus concurrentSpawnLimit consecutiveFailureLimit podSecurityContext "
        "containerSecurityContext deploymentStrategy extraContainers extraVolumeMounts "
        "extraVolumes livenessProbe readinessProbe namedServerLimitPerUser redirectToServer "
        "resources lifecycle services loadRoles shutdownOnLogout templatePaths templateVars "
        "serviceAccount extraPodSpec"
    ),
)

# The idle culler's flags (jupyterhub_config.py passes each one that is set):
# --timeout, --cull-every, --concurrency, --max-age in seconds or counts.
CULL = closed(
    enabled=BOOL,
    users=OPT_BOOL,
    adminUsers=OPT_BOOL,
    removeNamedServers=OPT_BOOL,
    timeout=OPT_INT,
    every=OPT_INT,
    concurrency=OPT_INT,
    maxAge=OPT_INT,
)

VALUES = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    **closed(
        singleuser=SINGLEUSER,
        hub=HUB,
        cull=CULL,
        **names(
            "enabled fullnameOverride nameOverride imagePullSecret imagePullSecrets proxy "
            "scheduling ingress httpRoute prePuller custom debug rbac global"
        ),
    ),
}
