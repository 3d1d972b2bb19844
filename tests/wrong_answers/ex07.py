"""Wrong answers for exercises/07_parameter_servers.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "07_parameter_servers.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
HAND_IN = "first variable on task 1"

# The solution's make_tf_config with the checks, the messages or the text swapped.
_JOB_CHECK = """
if task_type not in cluster_dict:
    raise ValueError(f"no job {task_type!r} in the cluster; it has {sorted(cluster_dict)}")
"""
_CONFIG = """
{job_check}
size = len(cluster_dict[task_type])
if {bad_index}:
    raise ValueError(f"{{task_type}} index must be 0 to {{{last}}}, got {{index}}")
return {result}
"""
_TEXT = 'json.dumps({"cluster": cluster_dict, "task": {"type": task_type, "index": index}})'


def _config(job_check=_JOB_CHECK, bad_index="not 0 <= index < size", last="size - 1", result=_TEXT):
    return _CONFIG.format(job_check=job_check, bad_index=bad_index, last=last, result=result)


# The solution's count_steps with the counter made elsewhere, updated otherwise, or not awaited.
_COUNT = """
strategy = coordinator.strategy
{make}

@tf.function
def step():
    strategy.run(lambda: {update})

for _ in range(steps):
    coordinator.schedule(step)
{join}
return int(counter.numpy())
"""


def _count(
    make="with strategy.scope():\n    counter = tf.Variable(0, dtype=tf.int64)",
    update="counter.assign_add(1)",
    join="coordinator.join()",
):
    return _COUNT.format(make=make, update=update, join=join)


WRONG: list[Wrong] = [
    # 1. make_tf_config
    Wrong(
        1,
        "no validation",
        f"return {_TEXT}",
        check="1",
        expect=r"worker index 3 must raise ValueError",
    ),
    Wrong(
        1,
        "index up to the size",
        _config(bad_index="not 0 <= index <= size"),
        check="1",
        expect=r"worker index 3 must raise ValueError",
    ),
    Wrong(
        1,
        "negative index accepted",
        _config(bad_index="index >= size"),
        check="1",
        expect=r"worker index -1 must raise ValueError",
    ),
    Wrong(
        1,
        "valid index rejected",
        _config(bad_index="not 0 <= index < size - 1"),
        check="1",
        expect=r"chief:0 is a task of CLUSTER, yet you raised: chief index must be 0 to 0",
    ),
    Wrong(
        1,
        "range named 0 to size",
        _config(last="size"),
        check="1",
        expect=r"name the valid range '0 to 2' of job 'worker' in the message: "
        r"worker index must be 0 to 3",
    ),
    Wrong(
        1,
        "KeyError for a missing job",
        _config(job_check=""),
        check="1",
        expect=r"evaluator:0 raised KeyError \('evaluator'\), not a ValueError",
    ),
    Wrong(
        1,
        "missing job not named",
        _config(job_check=_JOB_CHECK.replace("; it has {sorted(cluster_dict)}", "")),
        check="1",
        expect=r"should name the jobs it has \(chief, ps, worker\); "
        r"yours says: no job 'evaluator' in the cluster$",
    ),
    Wrong(
        1,
        "a dict, not JSON text",
        _config(result='{"cluster": cluster_dict, "task": {"type": task_type, "index": index}}'),
        check="1",
        expect=r"return JSON text \(json.dumps\), not dict",
    ),
    Wrong(
        1,
        "task id key",
        _config(result=_TEXT.replace('"index": index', '"id": index')),
        check="1",
        expect=r"chief:0: TensorFlow reads the task as chief:None",
    ),
    # 2. predict_ps
    Wrong(
        2,
        "first variable on task 1",
        "return {name: (k + 1) % num_ps for k, name in enumerate(variable_names)}",
        check="2",
        expect=r"2 ps: global_step, variable 0 in creation order, is on ps task 0; you predict 1",
    ),
    Wrong(
        2,
        "global step left on the worker",
        """
        names = [name for name in variable_names if name != "global_step"]
        return {name: k % num_ps for k, name in enumerate(names)}
        """,
        check="2",
        expect=r"2 ps: you predict no task for \['global_step'\]",
    ),
    Wrong(
        2,
        "contiguous blocks",
        "return {name: k * num_ps // len(variable_names) for k, name in enumerate(variable_names)}",
        check="2",
        expect=r"2 ps: conv1/kernel, variable 1 in creation order, is on ps task 1; you predict 0",
    ),
    Wrong(
        2,
        "alphabetical order",
        "return {name: k % num_ps for k, name in enumerate(sorted(variable_names))}",
        check="2",
        # with 2 ps the sorted names happen to take the same turns; 3 ps tell them apart
        expect=r"3 ps: global_step, variable 0 in creation order, is on ps task 0; you predict 1",
    ),
    Wrong(
        2,
        "device strings",
        'return {name: f"/job:ps/task:{k % num_ps}" for k, name in enumerate(variable_names)}',
        check="2",
        expect=r"global_step: '/job:ps/task:0'; predict the index of the ps task, an int",
    ),
    # 3. count_steps (each run starts a local cluster: a few seconds)
    Wrong(
        3,
        "read then assign",
        _count(update="counter.assign(counter + 1)"),
        check="3",
        expect=r"count_steps\(coordinator, 60\): the step writes the counter back with assign "
        r"\(AssignVariableOp\)",
    ),
    Wrong(
        3,
        "counter outside strategy.scope()",
        _count(make="counter = tf.Variable(0, dtype=tf.int64)"),
        check="3",
        expect=r"count_steps\(coordinator, 60\): the counter lives on '/job:chief/.*', not on a ps",
    ),
    Wrong(
        3,
        "no join",
        _count(join=""),
        check="3",
        expect=r"count_steps\(coordinator, 60\) read the count before the scheduled steps had "
        r"finished",
    ),
    Wrong(
        3,
        "a Python counter",
        """
        count = 0

        @tf.function
        def step():
            nonlocal count
            count += 1
            return tf.constant(1)

        for _ in range(steps):
            coordinator.schedule(step)
        coordinator.join()
        return count
        """,
        check="3",
        expect=r"count_steps\(coordinator, 60\) made no tf.Variable",
    ),
    # found by a second pair of eyes
    Wrong(
        1,
        "the size taken from the number of jobs",
        _config().replace("size = len(cluster_dict[task_type])", "size = len(cluster_dict)"),
        check="1",
        expect=r"ps index 2 must raise ValueError: the job 'ps' has 2 task\(s\)",
    ),
    Wrong(
        1,
        "a float index",
        _config(result=_TEXT.replace('"index": index', '"index": float(index)')),
        check="1",
        expect=r"chief:0: the task index is written as a float, not an int",
    ),
    Wrong(
        1,
        "str() of the dict",
        _config(result=_TEXT.replace("json.dumps(", "str(")),
        check="1",
        expect=r"chief:0: your text is not JSON .*json\.dumps writes JSON",
    ),
    Wrong(
        1,
        "TF_CONFIG set as well",
        _config().replace(
            "return " + _TEXT,
            "os.environ['TF_CONFIG'] = " + _TEXT + "\nreturn os.environ['TF_CONFIG']",
        ),
        check="1",
        expect=r"make_tf_config changed os\.environ\['TF_CONFIG'\]",
    ),
    Wrong(
        3,
        "a float counter",
        _count(make="with strategy.scope():\n    counter = tf.Variable(0.0)"),
        check="3",
        expect=r"the counter is a float32; a float32 stops counting exactly",
    ),
    Wrong(
        3,
        "the steps asked for returned",
        _count().replace("return int(counter.numpy())", "return int(steps)"),
        check="3",
        expect=r"count_steps\(coordinator, 7\) returned 7, but the workers ran the step 8 times",
    ),
]
