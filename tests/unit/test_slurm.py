"""dpkit.slurm and the launcher's --slurm mode, no process: Slurm's variables for a job step
written out by hand, the cluster each task gets held against a hand-made list, TensorFlow's
own SlurmClusterResolver failures that lesson 08 shows, and every refusal's words. The real
Slurm runs are tests/process/test_slurm.py."""

from __future__ import annotations

import pytest

from dpkit import launcher, slurm


def step(rank, nodelist="node[01-02]", per_node="2(x2)", tasks=4, node=None, **more):
    """The variables srun sets in task ``rank`` of a job step."""
    env = {
        "SLURM_PROCID": str(rank),
        "SLURM_STEP_NUM_TASKS": str(tasks),
        "SLURM_STEP_NODELIST": nodelist,
        "SLURM_STEP_TASKS_PER_NODE": per_node,
        **more,
    }
    if node:
        env["SLURMD_NODENAME"] = node
    return env


FOUR = ["node01:2222", "node01:2223", "node02:2222", "node02:2223"]


@pytest.mark.parametrize("rank", range(4))
def test_every_rank_is_the_worker_of_its_rank_on_its_node_and_port(rank):
    job, index, cluster = slurm.resolve(step(rank, node=FOUR[rank].split(":")[0]))
    assert (job, index) == ("worker", rank)
    assert cluster == {"worker": FOUR}


def test_uneven_nodes_and_another_port_base():
    env = step(2, nodelist="a,b", per_node="2,1", tasks=3, node="b")
    assert slurm.resolve(env, port_base=5000) == (
        "worker",
        2,
        {"worker": ["a:5000", "a:5001", "b:5000"]},
    )


def test_a_parameter_server_job_takes_the_first_ranks_in_job_name_order():
    names = [slurm.resolve(step(r), jobs="chief:1,ps:1")[:2] for r in range(4)]
    assert names == [("chief", 0), ("ps", 0), ("worker", 0), ("worker", 1)]
    cluster = slurm.resolve(step(0), jobs="ps:1,chief:1")[2]
    assert cluster == {"chief": FOUR[:1], "ps": FOUR[1:2], "worker": FOUR[2:]}


def test_cpu_nodes_leave_cuda_visible_devices_alone_and_gpu_nodes_get_their_own(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    cpu = step(1)
    slurm.resolve(cpu)
    assert "CUDA_VISIBLE_DEVICES" not in cpu
    gpus = [step(r) for r in range(4)]
    for env in gpus:
        slurm.resolve(env, gpus_per_task=2)
    # two tasks a node, two GPUs each: the first task of a node has 0,1, the second 2,3
    assert [e["CUDA_VISIBLE_DEVICES"] for e in gpus] == ["0,1", "2,3", "0,1", "2,3"]
    import os

    assert "CUDA_VISIBLE_DEVICES" not in os.environ  # only the stand-in was changed


def test_tensorflows_resolver_alone_fails_on_cpu_nodes_as_lesson_08_says():
    import tensorflow as tf

    env = step(0)
    with slurm.environment(env):
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(gpus_per_node=0)
        with pytest.raises(ValueError, match="must not be zero"):
            resolver.cluster_spec()
        # with one pretend GPU per task and no CUDA_VISIBLE_DEVICES, the spec comes out;
        # TensorFlow's own port base is 8888 (JupyterLab's port), dpkit's 2222
        fine = tf.distribute.cluster_resolver.SlurmClusterResolver(
            gpus_per_node=2, auto_set_gpu=False
        )
        assert fine.cluster_spec().as_dict() == {
            "worker": [f"node0{n}:{p}" for n in (1, 2) for p in (8888, 8889)]
        }


def test_the_resolvers_node_order_is_refused_where_it_is_not_slurms():
    env = step(0, nodelist="node[9-10]", node="node9")
    with pytest.raises(ValueError, match=r"node10 before node9.*--nodelist=node\[09-10\]"):
        slurm.resolve(env)
    env = step(0, nodelist="node[09-10]", node="node09")
    assert slurm.resolve(env)[2]["worker"][0] == "node09:2222"


@pytest.mark.parametrize(
    "change, words",
    [
        ({"SLURM_PROCID": None}, "SLURM_PROCID is not set: this is not a Slurm job step"),
        ({"SLURM_STEP_NODELIST": ""}, "SLURM_STEP_NODELIST is not set"),
        ({"SLURM_PROCID": "4"}, "not a rank below SLURM_STEP_NUM_TASKS='4'"),
        ({"SLURM_STEP_TASKS_PER_NODE": "2(x)"}, "is not Slurm's form"),
        ({"SLURM_STEP_TASKS_PER_NODE": "0"}, "is not Slurm's form"),
    ],
)
def test_a_broken_step_is_refused_with_what_to_do(change, words):
    env = step(0)
    for name, value in change.items():
        env.pop(name) if value is None else env.__setitem__(name, value)
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        slurm.resolve(env)


@pytest.mark.parametrize(
    "jobs, words",
    [
        ("ps:0", "each entry is chief:1 or ps:N"),
        ("master:1", "each entry is chief:1 or ps:N"),
        ("chief:2", "asks for 2 chiefs"),
        ("ps:3,chief:1", "leaving no worker"),
        ("ps:1,ps:1", "once each"),
    ],
)
def test_bad_jobs_are_refused(jobs, words):
    with pytest.raises(ValueError, match=words):
        slurm.resolve(step(0), jobs=jobs)


def test_port_base_must_leave_room_for_every_task_of_a_node():
    with pytest.raises(ValueError, match="port_base must be a whole number from 1024 to 65534"):
        slurm.resolve(step(0), port_base=65535)


# ----------------------------------------------------------------------------- the launcher


def test_the_launcher_reads_the_task_from_slurm_and_the_shape_picks_the_flavour():
    task = launcher.parse(["--slurm", "--port-base=3000"], step(3, node="node02"))
    assert (task.name, task.source, task.flavour) == ("worker:3", "Slurm", "mirrored")
    assert task.address == "node02:3001"
    ps = launcher.parse(["--slurm", "--slurm-jobs=chief:1,ps:1"], step(1))
    assert (ps.name, ps.flavour, ps.trains) == ("ps:0", "ps_strategy", False)


@pytest.mark.parametrize(
    "argv, environ, words",
    [
        (["--port-base=3000"], {}, "--port-base only apply with --slurm"),
        (["--slurm", "--job_name=worker"], step(0), "--slurm reads the task and the cluster"),
        (["--slurm"], {}, "SLURM_PROCID is not set"),
        (["--slurm", "--batch-size=63"], step(0), "batch-size=63"),
    ],
)
def test_the_launcher_refuses_a_slurm_task_that_cannot_work(argv, environ, words):
    with pytest.raises(launcher.LaunchError, match=words):
        launcher.parse(argv, environ)


# ----------------------------------------------------------------------------- the script


def test_the_batch_script_asks_for_what_it_is_given_and_runs_the_task_under_srun():
    script = slurm.batch_script(
        ["--train-steps=30"], nodes=2, tasks_per_node=4, cpus_per_task=8, gpus_per_task=1
    )
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    for line in ["--nodes=2", "--ntasks-per-node=4", "--cpus-per-task=8", "--gres=gpu:4"]:
        assert f"#SBATCH {line}" in lines
    assert lines[-1] == (
        "srun python -m dpkit task --slurm --port-base=2222 --gpus-per-task=1 --train-steps=30"
    )
    cpu = slurm.batch_script([], jobs="chief:1,ps:1", tasks_per_node=4, overcommit=True)
    assert not any("gres" in line for line in cpu.splitlines())
    assert "#SBATCH --overcommit" in cpu and "--slurm-jobs=chief:1,ps:1" in cpu


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"task_flags": ["--job_name=worker"]}, "leave the task and host flags out"),
        ({"task_flags": ["--worker-hosts=a:1"]}, "leave the task and host flags out"),
        ({"time_limit": "ten minutes"}, "is not Slurm's form"),
        ({"nodes": 0}, "nodes must be a whole number >= 1"),
        ({"jobs": "ps:2", "tasks_per_node": 2}, "leaving no worker"),
    ],
)
def test_the_batch_script_refuses_what_cannot_run(kwargs, words):
    kwargs = {"task_flags": [], **kwargs}
    with pytest.raises(ValueError, match=words):
        slurm.batch_script(**kwargs)
