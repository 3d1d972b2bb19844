"""Wrong answers for exercises/07_parameter_servers.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "07_parameter_servers.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
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


# The solution's shard_shapes with the count, its limits or the rows swapped.
_SHARDS = """
rows = shape[0]
size = math.prod(shape) * tf.as_dtype(dtype).size
shards = max(1, {limits})
base, extra = divmod(rows, shards)
return [({rows}, *shape[1:]) for k in range(shards)]
"""


def _shards(
    count="math.ceil(size / min_shard_bytes)",
    limits="min(rows, max_shards, {count})",
    rows="base + (k < extra)",
):
    return _SHARDS.format(limits=limits.format(count=count), rows=rows)


WRONG: list[Wrong] = [
    # 1. make_tf_config
    Wrong(
        1,
        "no validation",
        f"return {_TEXT}",
        check="1",
        expect=r"chief index 1 must raise ValueError: the job 'chief' has 1 task\(s\)",
    ),
    Wrong(
        1,
        "index up to the size",
        _config(bad_index="not 0 <= index <= size"),
        check="1",
        expect=r"chief index 1 must raise ValueError: the job 'chief' has 1 task\(s\)",
    ),
    Wrong(
        1,
        "negative index accepted",
        _config(bad_index="index >= size"),
        check="1",
        expect=r"chief index -1 must raise ValueError",
    ),
    Wrong(
        1,
        "valid index rejected",
        _config(bad_index="not 0 <= index < size - 1"),
        check="1",
        expect=r"chief:0 is a task of \['chief', 'ps', 'worker'\], yet you raised: "
        r"chief index must be 0 to 0",
    ),
    Wrong(
        1,
        "range named 0 to size",
        _config(last="size"),
        check="1",
        expect=r"name the valid range '0 to 0' of job 'chief' in the message: "
        r"chief index must be 0 to 1",
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
        expect=r"chief:0 of \[.*\] jobs: TensorFlow reads the task as chief:None",
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
        expect=r"2 ps: global_step, variable 0 in creation order, is on ps task 0; you predict 1",
    ),
    Wrong(
        2,
        "device strings",
        'return {name: f"/job:ps/task:{k % num_ps}" for k, name in enumerate(variable_names)}',
        check="2",
        expect=r"global_step: '/job:ps/task:0'; predict the index of the ps task, an int",
    ),
    # found by a second pair of eyes
    Wrong(
        1,
        "the size taken from the number of jobs",
        _config().replace("size = len(cluster_dict[task_type])", "size = len(cluster_dict)"),
        check="1",
        expect=r"worker:1 is a task of \['worker'\], yet you raised: worker index must be 0 to 0",
    ),
    Wrong(
        1,
        "a float index",
        _config(result=_TEXT.replace('"index": index', '"index": float(index)')),
        check="1",
        expect=r"chief:0 of \[.*\] jobs: the task index is written as a float, not an int",
    ),
    Wrong(
        1,
        "str() of the dict",
        _config(result=_TEXT.replace("json.dumps(", "str(")),
        check="1",
        expect=r"chief:0 of \[.*\] jobs: your text is not JSON .*json\.dumps writes JSON",
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
    # 3. shard_shapes
    Wrong(
        3,
        "the shard count rounded down",
        _shards(count="size // min_shard_bytes"),
        check="3",
        expect=r"shard_shapes\(\(1000, 64\), 'float32', 65536, 8\): 3 shard\(s\), TensorFlow cuts "
        r"4: the variable is 256000 bytes, 3\.90625 times min_shard_bytes; TensorFlow rounds",
    ),
    Wrong(
        3,
        "one shard more than the bytes fill",
        _shards(count="size // min_shard_bytes + 1"),
        check="3",
        expect=r"shard_shapes\(\(8, 4\), 'float32', 32, 8\): 5 shard\(s\), TensorFlow cuts 4: "
        r"the variable is 128 bytes, 4 times min_shard_bytes",
    ),
    Wrong(
        3,
        "max_shards ignored",
        _shards(limits="min(rows, {count})"),
        check="3",
        expect=r"shard_shapes\(\(1000, 64\), 'float32', 65536, 2\): 4 shard\(s\), TensorFlow cuts "
        r"2: no more shards than max_shards \(2\)",
    ),
    Wrong(
        3,
        "more shards than rows",
        _shards(limits="min(max_shards, {count})"),
        check="3",
        expect=r"shard_shapes\(\(3, 4\), 'float32', 4, 8\): 8 shard\(s\), TensorFlow cuts 3: no "
        r"more shards than max_shards \(8\) or rows \(3\)",
    ),
    Wrong(
        3,
        "the longer shards last",
        _shards(rows="base + (k >= shards - extra)"),
        check="3",
        expect=r"shard_shapes\(\(10, 3\), 'float64', 48, 4\): \[\(2, 3\), \(2, 3\), \(3, 3\), "
        r"\(3, 3\)\], TensorFlow's are .*: the longer shards come first",
    ),
    Wrong(
        3,
        "the remainder all on the last shard",
        _shards(rows="base + (k == shards - 1) * extra"),
        check="3",
        expect=r"shard_shapes\(\(10, 3\), 'float64', 48, 4\): shards of \[2, 2, 2, 4\] rows \(10 "
        r"in all\), TensorFlow's are \[3, 3, 2, 2\] of 10",
    ),
    Wrong(
        3,
        "elements counted as bytes",
        _shards().replace(" * tf.as_dtype(dtype).size", ""),
        check="3",
        expect=r"shard_shapes\(\(1000, 64\), 'float32', 65536, 2\): 1 shard\(s\), TensorFlow cuts "
        r"2: a variable this big is cut \(bytes = elements x 4\)",
    ),
    Wrong(
        3,
        "cut along the last axis",
        """
        size = math.prod(shape) * tf.as_dtype(dtype).size
        shards = max(1, min(shape[-1], max_shards, math.ceil(size / min_shard_bytes)))
        base, extra = divmod(shape[-1], shards)
        return [(*shape[:-1], base + (k < extra)) for k in range(shards)]
        """,
        check="3",
        expect=r"shard_shapes\(\(1000, 64\), 'float32', 65536, 2\): \[\(1000, 32\), \(1000, 32\)\]"
        r": TensorFlow cuts along the first axis only",
    ),
    Wrong(
        3,
        "rows cut by ceiling, the last shard short",
        _shards(rows="min(-(-rows // shards), rows - k * -(-rows // shards))"),
        check="3",
        expect=r"shard_shapes\(\(10, 3\), 'float64', 48, 4\): shards of \[3, 3, 3, 1\] rows",
    ),
    # found by red-teaming: answers the checks were not first written for
    Wrong(
        1,
        "only the task's own job in the cluster",
        _config(
            result='json.dumps({"cluster": {task_type: cluster_dict[task_type]}, '
            '"task": {"type": task_type, "index": index}})'
        ),
        check="1",
        expect=r"chief:0 of \[.*\] jobs: TensorFlow reads the cluster \{'chief': \[",
    ),
    Wrong(
        1,
        "the index written as text",
        _config(result=_TEXT.replace('"index": index', '"index": str(index)')),
        check="1",
        expect=r"the task index is written as a str, not an int",
    ),
    Wrong(
        1,
        "every job sized as the workers",
        _config().replace(
            "size = len(cluster_dict[task_type])", "size = len(cluster_dict['worker'])"
        ),
        check="1",
        expect=r"ps:1 is a task of \['chief', 'ps', 'worker'\], yet you raised",
    ),
    Wrong(
        2,
        "turns dealt from the last variable",
        "return {name: (len(variable_names) - 1 - k) % num_ps "
        "for k, name in enumerate(variable_names)}",
        check="2",
        expect=r"2 ps: global_step, variable 0 in creation order, is on ps task 0; you predict 1",
    ),
    Wrong(
        2,
        "two ps whatever num_ps says",
        "return {name: k % 2 for k, name in enumerate(variable_names)}",
        check="2",
        expect=r"3 ps: m_scale, variable 2 in creation order, is on ps task 2; you predict 0",
    ),
    Wrong(
        3,
        "the shard count rounded to the nearest",
        _shards(count="round(size / min_shard_bytes)"),
        check="3",
        expect=r"shard_shapes\(\(100,\), 'float16', 64, 4\): 3 shard\(s\), TensorFlow cuts 4: "
        r"the variable is 200 bytes, 3\.125 times min_shard_bytes; TensorFlow rounds that up",
    ),
    Wrong(
        3,
        "whole rows per min_shard_bytes",
        _shards(count="math.ceil(rows / max(1, min_shard_bytes // (size // rows)))"),
        check="3",
        expect=r"shard_shapes\(\(9, 2\), 'float64', 40, 5\): 5 shard\(s\), TensorFlow cuts 4",
    ),
    Wrong(
        3,
        "four bytes an element whatever the dtype",
        _shards().replace("tf.as_dtype(dtype).size", "4"),
        check="3",
        expect=r"shard_shapes\(\(10, 3\), 'float64', 48, 4\): 3 shard\(s\), TensorFlow cuts 4",
    ),
    # a second red team
    Wrong(
        3,
        "the remainder rows dropped",
        _shards(rows="base"),
        check="3",
        expect=r"shard_shapes\(\(10, 3\), 'float64', 48, 4\): shards of \[2, 2, 2, 2\] rows \(8 in "
        r"all\), TensorFlow's are \[3, 3, 2, 2\] of 10",
    ),
    # a third red team
    Wrong(
        1,
        "each job's addresses sorted",
        _config(
            result='json.dumps({"cluster": {j: sorted(a) for j, a in cluster_dict.items()}, '
            '"task": {"type": task_type, "index": index}})'
        ),
        check="1",
        expect=r"chief:0 of .*TensorFlow reads the cluster .*: a task's index is its place in "
        r"its job's list; keep the order given",
    ),
    Wrong(
        1,
        "the task added to the cluster dict it was given",
        _config(
            result='json.dumps({"cluster": {j: a for j, a in cluster_dict.items() if j != "task"}, '
            '"task": cluster_dict.setdefault("task", {"type": task_type, "index": index})})'
        ),
        check="1",
        expect=r"chief:0: make_tf_config changed the cluster_dict it was given, to .*'task': "
        r"\{'type': 'chief', 'index': 0\}\}: the launcher uses the same dict",
    ),
    Wrong(
        2,
        "the global step always on task 0",
        "return {name: 0 if 'global_step' in name else k % num_ps "
        "for k, name in enumerate(variable_names)}",
        check="2",
        expect=r"3 ps: global_step, variable 4 in creation order, is on ps task 1; you predict 0: "
        r"the global step takes its turn like any variable",
    ),
    # issue 46: a message is read for the jobs it names, not only for those it must name
    Wrong(
        1,
        "the usual jobs typed in the message",
        _config(
            job_check=_JOB_CHECK.replace("it has {sorted(cluster_dict)}", "use chief, ps or worker")
        ),
        check="1",
        expect=r"the error for 'evaluator', a job the cluster lacks, also names \['chief', 'ps'\], "
        r"which this cluster does not have either \(it has worker\): .*not a list typed in",
    ),
    Wrong(
        1,
        "the first cluster's jobs typed in the message",
        _config(
            job_check=_JOB_CHECK.replace(
                "it has {sorted(cluster_dict)}", "it has ['chief', 'ps', 'worker']"
            )
        ),
        check="1",
        expect=r"the error for 'evaluator', a job the cluster lacks, also names \['chief', 'ps'\]",
    ),
    # issue 46: "as tuples" is now observed, not converted away
    Wrong(
        3,
        "shapes as lists",
        _shards().replace(
            "return [(base + (k < extra), *shape[1:]) for",
            "return [[base + (k < extra), *shape[1:]] for",
        ),
        check="3",
        expect=r"shard_shapes\(\(1000, 64\), 'float32', 65536, 2\): \[\[500, 64\], \[500, 64\]\]: "
        r"a shard's shape is a list, not a tuple",
    ),
]
