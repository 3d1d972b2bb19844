"""The task launcher's checks (``launcher.parse``), no process: each bad flag or TF_CONFIG is
refused with words that name the problem; flags and TF_CONFIG describe the same task, held
against TensorFlow's own TFConfigClusterResolver; the cluster decides the flavour and roles.
Training runs it drives: tests/process/test_launcher.py."""

from __future__ import annotations

import json

import pytest

from dpkit import launcher

HOSTS = ["--ps_hosts=10.0.0.1:2222", "--worker_hosts=10.0.0.2:2222,10.0.0.3:2222"]
PS = [*HOSTS, "--chief_hosts=10.0.0.4:2222"]


def config(task_type="worker", index=0, **cluster):
    cluster = cluster or {"worker": ["10.0.0.2:2222", "10.0.0.3:2222"]}
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


BAD = {
    "unknown job": (
        ["--job_name=master", "--task_index=0", *PS],
        {},
        "unknown --job_name 'master'",
    ),
    "index out of range": (
        ["--job_name=worker", "--task_index=2", *PS],
        {},
        "task index 2 is out of range: --worker_hosts lists 2 worker",
    ),
    "negative index": (
        ["--job_name=worker", "--task_index=-1", *PS],
        {},
        "--task_index must be a whole number >= 0",
    ),
    "index not a number": (
        ["--job_name=worker", "--task_index=one", *PS],
        {},
        "--task_index must be a whole number",
    ),
    "worker list empty": (
        ["--job_name=ps", "--task_index=0", "--ps_hosts=a:1", "--worker_hosts="],
        {},
        "--worker_hosts is empty",
    ),
    "no workers": (
        ["--job_name=ps", "--task_index=0", "--ps_hosts=a:1"],
        {},
        "--worker_hosts is missing or empty",
    ),
    "no port": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=10.0.0.2"],
        {},
        "'10.0.0.2' is not HOST:PORT (no port)",
    ),
    "port not a number": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=10.0.0.2:two"],
        {},
        "the port 'two' in '10.0.0.2:two' is not a number",
    ),
    "port out of range": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=10.0.0.2:70000"],
        {},
        "outside 1-65535",
    ),
    "empty entry": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=a:1,,b:2"],
        {},
        "has an empty entry",
    ),
    "bad host": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=bad_host!:2222"],
        {},
        "is not a host name or address",
    ),
    "same address twice": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=a:1,a:1"],
        {},
        "the address a:1 is given to worker:0 and worker:1",
    ),
    "chief without chief_hosts": (
        ["--job_name=chief", "--task_index=0", *HOSTS],
        {},
        "--chief_hosts is missing or empty",
    ),
    "two chiefs": (
        ["--job_name=chief", "--task_index=0", *HOSTS, "--chief_hosts=c:1,d:1"],
        {},
        "a cluster has one chief",
    ),
    "ps without a chief": (
        ["--job_name=worker", "--task_index=0", *HOSTS],
        {},
        "needs a chief to run ParameterServerStrategy",
    ),
    "tf1 with a chief": (["--tf1", "--job_name=worker", "--task_index=0", *PS], {}, "no chief job"),
    "tf1 without ps": (
        ["--tf1", "--job_name=worker", "--task_index=0", "--worker_hosts=a:1"],
        {},
        "--tf1 needs at least one ps",
    ),
    "sync with ParameterServerStrategy": (
        ["--sync_replicas", "--job_name=worker", "--task_index=0", *PS],
        {},
        "--sync_replicas belongs to the TF1 flavour",
    ),
    "aggregate more than workers": (
        ["--tf1", "--sync_replicas", "--replicas_to_aggregate=3"]
        + ["--job_name=worker", "--task_index=0", *HOSTS],
        {},
        "--replicas_to_aggregate=3 is more than the 2 workers",
    ),
    "no job name": (["--task_index=0", *PS], {}, "--job_name is missing"),
    "no task at all": ([], {}, "no task given"),
    "unknown flag": (["--jobname=ps"], {}, "unrecognized arguments: --jobname=ps"),
    "zero steps": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=a:1", "--train_steps=0"],
        {},
        "--train_steps must be a whole number >= 1",
    ),
    "batch does not split": (
        ["--job_name=worker", "--task_index=0", "--worker_hosts=a:1,b:1,c:1", "--batch_size=64"],
        {},
        "--batch_size=64 does not split evenly over 3 workers",
    ),
    "TF_CONFIG not JSON": ([], {"TF_CONFIG": "{cluster: worker}"}, "TF_CONFIG is not valid JSON"),
    "TF_CONFIG without task": (
        [],
        {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]}})},
        'TF_CONFIG has no "task"',
    ),
    "TF_CONFIG unknown type": (
        [],
        {"TF_CONFIG": config("evaluator")},
        "task type 'evaluator' is not ps, worker or chief",
    ),
    "TF_CONFIG index out of range": (
        [],
        {"TF_CONFIG": config("worker", 5)},
        "task index 5 is out of range: TF_CONFIG cluster 'worker' lists 2",
    ),
    "TF_CONFIG bad port": (
        [],
        {"TF_CONFIG": config(worker=["a:port"])},
        "the port 'port' in 'a:port' is not a number",
    ),
    "TF_CONFIG master job": (
        [],
        {"TF_CONFIG": config(master=["a:1"], worker=["b:1"])},
        "'master' is called 'chief' now",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_task_is_refused_with_the_problem_named(case):
    argv, environ, words = BAD[case]
    with pytest.raises(launcher.LaunchError) as error:
        launcher.parse(argv, environ)
    assert words in str(error.value)


def test_flags_and_tf_config_describe_the_same_task():
    by_flags = launcher.parse(["--job_name=worker", "--task_index=1", *PS], {})
    again = launcher.parse([], {"TF_CONFIG": by_flags.tf_config()})
    assert (again.job, again.index, again.cluster, again.flavour) == (
        "worker",
        1,
        {"chief": ["10.0.0.4:2222"], "ps": ["10.0.0.1:2222"], "worker": by_flags.cluster["worker"]},
        "ps_strategy",
    )
    assert (by_flags.source, again.source) == ("flags", "TF_CONFIG")
    # flags win over a TF_CONFIG left in the environment, and the task says so
    mixed = launcher.parse(["--job_name=ps", "--task_index=0", *PS], {"TF_CONFIG": config()})
    assert mixed.name == "ps:0" and any("TF_CONFIG is set but ignored" in n for n in mixed.notes)


def test_tf_config_agrees_with_tensorflows_own_resolver(monkeypatch):
    import tensorflow as tf

    task = launcher.parse(["--job_name=worker", "--task_index=1", *PS], {})
    monkeypatch.setenv("TF_CONFIG", task.tf_config())
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    assert resolver.cluster_spec().as_dict() == task.cluster
    assert (resolver.task_type, resolver.task_id) == ("worker", 1)


@pytest.mark.parametrize(
    "argv, flavour, chief, trains",
    [
        (["--job_name=chief", "--task_index=0", *PS], "ps_strategy", True, True),
        (["--job_name=worker", "--task_index=0", *PS], "ps_strategy", False, False),
        (["--job_name=ps", "--task_index=0", *PS], "ps_strategy", False, False),
        (["--job_name=worker", "--task_index=0", "--worker_hosts=a:1,b:1"], "mirrored", True, True),
        (["--tf1", "--job_name=worker", "--task_index=0", *HOSTS], "tf1", True, True),
        (["--tf1", "--job_name=worker", "--task_index=1", *HOSTS], "tf1", False, True),
        (["--tf1", "--job_name=ps", "--task_index=0", *HOSTS], "tf1", False, False),
    ],
)
def test_the_cluster_decides_the_flavour_and_the_roles(argv, flavour, chief, trains):
    task = launcher.parse(argv, {})
    assert (task.flavour, task.is_chief, task.trains) == (flavour, chief, trains)


# ----------------------------------------------------------------------------- real runs


@pytest.mark.parametrize("spelling", ["--job_name", "--job-name"])
def test_a_flag_without_its_value_is_named_with_the_help_hint(spelling):
    with pytest.raises(launcher.LaunchError) as error:
        launcher.parse([spelling])
    other = "--" + spelling[2:].translate(str.maketrans("_-", "-_"))  # the spelling not typed
    assert f"argument {spelling}: expected one argument" in str(error.value)
    assert other not in str(error.value), "the error names the spelling that was not typed"
    assert "--help" in str(error.value)
