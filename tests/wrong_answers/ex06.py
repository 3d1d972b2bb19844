"""Wrong answers for exercises/06_tensorboard.ipynb (table format: base.py)."""

import textwrap

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "06_tensorboard.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
HAND_IN = "sample standard deviation"

# The solution's summaries with one piece swapped: the stddev, the histogram's tensor, the scope.
_SUMMARIES = """
{scope}
    mean = tf.reduce_mean(values)
    tf.summary.scalar("mean", mean, step=step)
    tf.summary.scalar("stddev", {std}, step=step)
    tf.summary.scalar("max", tf.reduce_max(values), step=step)
    tf.summary.scalar("min", tf.reduce_min(values), step=step)
    tf.summary.histogram("histogram", {hist}, step=step)
"""
_POPULATION = "tf.sqrt(tf.reduce_mean(tf.square(values - mean)))"


def _summaries(std=_POPULATION, hist="values", scoped=True):
    code = _SUMMARIES.format(std=std, hist=hist, scope="with tf.name_scope(name):")
    return code if scoped else textwrap.dedent(code.replace("with tf.name_scope(name):", ""))


# The solution's reader with one piece swapped.
_READER = """
reader = event_accumulator.EventAccumulator({path}{guidance})
{reload}
events = {order}
steps = [int(e.step) for e in events]
values = [{value} for e in events]
return steps, values
"""
_SORTED = "sorted(reader.{method}(tag), key=lambda e: e.step)"
_NEWEST = "sorted(tf.io.gfile.glob(f'{folder}/*tfevents*'))[-1]"


def _reader(
    path="str(folder)",
    guidance=", size_guidance={event_accumulator.TENSORS: 0}",
    reload="reader.Reload()",
    method="Tensors",
    order=_SORTED,
    value="float(tensor_util.make_ndarray(e.tensor_proto))",
):
    return _READER.format(
        path=path,
        guidance=guidance,
        reload=reload,
        order=order.format(method=method),
        value=value,
    )


# The solution's loop with the reduction, the step, the place of the summary or the flush
# swapped.
_LOOP = """
@tf.function
def step(x, y):
    at = {at}
    per_example = strategy.run({replica}, args=(x, y))
    loss = {loss}
    {write}

for x, y in dataset:
    step(x, y)
{flush}
"""
_WRITE = 'with writer.as_default():\n        tf.summary.scalar("loss", loss, step=at)'
_REPLICA_MEAN = "lambda x, y: tf.reduce_mean(replica_step(x, y))"
_MEAN = "strategy.reduce(tf.distribute.ReduceOp.MEAN, per_example, axis=0)"


def _loop(
    at="tf.identity(optimizer.iterations)",
    replica="replica_step",
    loss=_MEAN,
    write=_WRITE,
    flush="writer.flush()",
):
    return _LOOP.format(at=at, replica=replica, loss=loss, write=write, flush=flush)


# Answer 3 with the summary written inside the replicas' function.
_IN_REPLICA = """
def logged(x, y, at):
    per_example = replica_step(x, y)
    with writer.as_default():
        tf.summary.scalar("loss", tf.reduce_mean(per_example), step=at)
    return per_example
"""

WRONG: list[Wrong] = [
    # 1. my_variable_summaries
    Wrong(
        1,
        "sample standard deviation",
        _summaries(
            std="tf.sqrt(tf.reduce_sum(tf.square(values - mean)) "
            "/ (tf.cast(tf.size(values), tf.float32) - 1.0))"
        ),
        check="1",
        expect=r"conv1_kernel/stddev: .* is the sample standard deviation \(divided by n - 1\)",
    ),
    Wrong(
        1,
        "variance for stddev",
        _summaries(std="tf.math.reduce_variance(values)"),
        check="1",
        expect=r"conv1_kernel/stddev: .* is the variance",
    ),
    Wrong(
        1,
        "no name scope",
        _summaries(scoped=False),
        check="1",
        expect=r"the tags \['histogram', 'max', 'mean', 'min', 'stddev'\] are not under the name "
        r"scopes \['conv1_kernel', 'shifted_kernel', 'dense_bias'\]",
    ),
    Wrong(
        1,
        "min and max swapped",
        _summaries()
        .replace('"max", tf.reduce_max', '"max", tf.reduce_min')
        .replace('"min", tf.reduce_min', '"min", tf.reduce_max'),
        check="1",
        expect=r"conv1_kernel/min: 0\.\d+, NumPy says -0\.\d+",
    ),
    Wrong(
        1,
        "histogram of the mean",
        _summaries(hist="mean"),
        check="1",
        expect=r"conv1_kernel/histogram counts 1 values, the tensor has 800",
    ),
    Wrong(
        1,
        "histogram of the centred values",
        _summaries(hist="values - mean"),
        check="1",
        expect=r"conv1_kernel/histogram spans .* it shows some other tensor",
    ),
    Wrong(
        1,
        "dpkit's variable_summaries",
        """
        from dpkit import summaries

        summaries.variable_summaries(values, name=name, step=step)
        """,
        check="1",
        expect=r"calls dpkit's summaries.variable_summaries: the exercise is to write it yourself",
    ),
    Wrong(
        1,
        "step not passed",
        _summaries().replace(", step=step)", ")"),
        check="1",
        expect=r"my_variable_summaries raised ValueError: .*step",
    ),
    Wrong(
        1,
        "mean absolute deviation for the stddev",
        _summaries(std="tf.reduce_mean(tf.abs(values - mean))"),
        check="1",
        expect=r"conv1_kernel/stddev: .* is the mean absolute distance from the mean",
    ),
    Wrong(
        1,
        "the default summary step set and left set",
        "tf.summary.experimental.set_step(step)\n" + _summaries().replace(", step=step)", ")"),
        check="1",
        expect=r"left TensorFlow's default summary step at 11 \(it was None\)",
    ),
    Wrong(
        1,
        "a histogram with one bucket",
        _summaries(hist="values, buckets=1"),
        check="1",
        expect=r"conv1_kernel/histogram has 1 bucket\(s\): too few",
    ),
    # 2. read_scalars
    Wrong(
        2,
        "default size_guidance",
        _reader(guidance=""),
        check="2",
        expect=r"read 10 of the 10500 values written: .*as many as size_guidance says",
    ),
    Wrong(
        2,
        "a size_guidance of 1000",
        _reader(guidance=", size_guidance={event_accumulator.TENSORS: 1000}"),
        check="2",
        expect=r"read 1000 of the 10500 values written",
    ),
    Wrong(
        2,
        "only the newest event file",
        _reader(path=_NEWEST),
        check="2",
        expect=r"your 5600 values all come from one event file \(events\.out\.tfevents\.1700000300"
        r"\.host\.v2\) of the 3 in the folder, which hold 10500: .*read every one",
    ),
    Wrong(
        2,
        "only the first event file",
        _reader(path=_NEWEST.replace("[-1]", "[0]")),
        check="2",
        expect=r"your 4900 values all come from one event file \(events\.out\.tfevents\.1700000100",
    ),
    Wrong(
        2,
        "size_guidance for scalars",
        _reader(guidance=", size_guidance={event_accumulator.SCALARS: 0}"),
        check="2",
        expect=r"read 10 of the 10500 values written: .*the kind of event a scalar is stored as",
    ),
    Wrong(
        2,
        "Scalars instead of Tensors",
        _reader(method="Scalars", value="e.value"),
        check="2",
        expect=r"raised KeyError: .*TensorFlow 2 writes a scalar summary as a tensor event",
    ),
    Wrong(
        2,
        "no Reload",
        _reader(reload=""),
        check="2",
        expect=r"raised KeyError: .*has not read the files \(Reload\)",
    ),
    Wrong(
        2,
        "float_val of a tensor_content proto",
        _reader(value="e.tensor_proto.float_val[0]"),
        check="2",
        expect=r"raised IndexError: .*its float_val list is empty",
    ),
    Wrong(
        2,
        "NumPy arrays, not numbers",
        _reader(value="tensor_util.make_ndarray(e.tensor_proto)"),
        check="2",
        expect=r"values holds numpy\.ndarray items .*: return plain Python numbers",
    ),
    Wrong(
        2,
        "a dict of step to value",
        _reader().replace("return steps, values", "return {s: v for s, v in zip(steps, values)}"),
        check="2",
        expect=r"return \(steps, values\), two lists; you returned a dict",
    ),
    Wrong(
        2,
        "dpkit's summaries.read",
        """
        from dpkit import summaries

        steps, values = summaries.read(folder)["."].scalar(tag)
        return steps.tolist(), values.tolist()
        """,
        check="2",
        expect=r"your code calls dpkit's summaries.read: the exercise is to write it yourself",
    ),
    Wrong(
        2,
        "steps and values sorted apart",
        _reader().replace("return steps, values", "return sorted(steps), sorted(values)"),
        check="2",
        expect=r"the values are those written, but not each at its own step",
    ),
    Wrong(
        2,
        "in the order of the files, not of the steps",
        _reader(order="reader.{method}(tag)"),
        check="2",
        expect=r"the \(step, value\) pairs are right but in another order",
    ),
    Wrong(
        2,
        "values rounded",
        _reader(value="round(float(tensor_util.make_ndarray(e.tensor_proto)), 2)"),
        check="2",
        expect=r"your values are rounded to 2 decimal places",
    ),
    Wrong(
        2,
        "float steps",
        _reader().replace("int(e.step)", "float(e.step)"),
        check="2",
        expect=r"steps holds builtins\.float items \(0\.0\): return Python ints",
    ),
    Wrong(
        2,
        "the event files decoded by hand, in file order, sub-folders too",
        """
        steps, values = [], []
        import pathlib

        for path in sorted(pathlib.Path(folder).rglob("*tfevents*")):
            for event in tf.compat.v1.train.summary_iterator(str(path)):
                for v in event.summary.value:
                    if v.tag == tag:
                        steps.append(int(event.step))
                        values.append(float(tensor_util.make_ndarray(v.tensor)))
        return steps, values
        """,
        check="2",
        expect=r"the \(step, value\) pairs are right but in another order",
    ),
    Wrong(
        2,
        "every tag that contains the name",
        """
        reader = event_accumulator.EventAccumulator(
            str(folder), size_guidance={event_accumulator.TENSORS: 0}
        )
        reader.Reload()
        events = sorted(
            (e for t in reader.Tags()["tensors"] if tag in t for e in reader.Tensors(t)),
            key=lambda e: e.step,
        )
        return [int(e.step) for e in events], [
            float(tensor_util.make_ndarray(e.tensor_proto)) for e in events
        ]
        """,
        check="2",
        expect=r"pair\(s\) never written under this tag in this folder.*not tags that contain it",
    ),
    # 3. train_and_log
    Wrong(
        3,
        "the replicas' means summed",
        _loop(
            replica=_REPLICA_MEAN,
            loss="strategy.reduce(tf.distribute.ReduceOp.SUM, per_example, axis=None)",
        ),
        check="3",
        expect=r"on 2 replica\(s\).*at step 0 you logged .*: 2\.00 times the loss: you summed",
    ),
    Wrong(
        3,
        "a mean of the replicas' means",
        _loop(
            replica=_REPLICA_MEAN,
            loss="strategy.reduce(tf.distribute.ReduceOp.MEAN, per_example, axis=None)",
        ),
        check="3",
        expect=r"on 2 replica\(s\).*at step 2 .*right on the full batches, wrong on the last one",
    ),
    Wrong(
        3,
        "the summary inside the replicas' function",
        _IN_REPLICA
        + _loop(replica="logged", loss="None", write="pass").replace(
            "args=(x, y)", "args=(x, y, at)"
        ),
        check="3",
        expect=r"on 2 replica\(s\), the optimizer at step 0: at step 0 you logged",
    ),
    Wrong(
        3,
        "a step counter of its own",
        """
        @tf.function
        def step(x, y, at):
            per_example = strategy.run(replica_step, args=(x, y))
            loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_example, axis=0)
            with writer.as_default():
                tf.summary.scalar("loss", loss, step=at)

        for at, (x, y) in enumerate(dataset):
            step(x, y, tf.constant(at, tf.int64))
        writer.flush()
        """,
        check="3",
        expect=r"on 1 replica\(s\), the optimizer at step 7: you logged steps \[0, 1, 2\], "
        r"expected \[7, 8, 9\]: your steps start at 0",
    ),
    Wrong(
        3,
        "the step read after the update",
        _loop(at="None", write=_WRITE.replace("step=at", "step=optimizer.iterations")),
        check="3",
        expect=r"you logged steps \[8, 9, 10\], expected \[7, 8, 9\]: each is one ahead",
    ),
    Wrong(
        3,
        "a default writer set for good, never flushed",
        _loop(write='tf.summary.scalar("loss", loss, step=at)', flush="").replace(
            "@tf.function", "writer.set_as_default()\n\n@tf.function"
        ),
        check="3",
        expect=r"on 1 replica\(s\), the optimizer at step 7: train_and_log left its writer as "
        r"TensorFlow's default writer \(set_as_default\)",
    ),
    Wrong(
        3,
        "no default writer",
        _loop(write='tf.summary.scalar("loss", loss, step=at)'),
        check="3",
        expect=r"the writer holds no scalar tagged 'loss'",
    ),
    Wrong(
        3,
        "one summary per replica's result",
        _loop(
            loss="strategy.experimental_local_results(per_example)",
            write="with writer.as_default():\n"
            "        for part in loss:\n"
            '            tf.summary.scalar("loss", tf.reduce_mean(part), step=at)',
        ),
        check="3",
        expect=r"on 2 replica\(s\).*you wrote 2 losses at step 0: write the loss once per step",
    ),
    # found by red-teaming: answers the checks were not first written for
    Wrong(
        1,
        "the values cast to float16",
        "values = tf.cast(values, tf.float16)\n" + _summaries(),
        check="1",
        expect=r"conv1_kernel/stddev: 0\.\d+, NumPy says 0\.\d+ .*differ",
    ),
    Wrong(
        2,
        "sorted by wall time",
        _reader(order="sorted(reader.{method}(tag), key=lambda e: e.wall_time)"),
        check="2",
        expect=r"the \(step, value\) pairs are right but in another order",
    ),
    Wrong(
        2,
        "the newest file by modification time",
        _reader(path="max(tf.io.gfile.glob(f'{folder}/*tfevents*'), key=os.path.getmtime)"),
        check="2",
        expect=r"your 5600 values all come from one event file",
    ),
    Wrong(
        2,
        "a reader per file, each asked for the tag",
        """
        steps, values = [], []
        for path in sorted(tf.io.gfile.glob(f"{folder}/*tfevents*")):
            reader = event_accumulator.EventAccumulator(
                path, size_guidance={event_accumulator.TENSORS: 0}
            )
            reader.Reload()
            for e in reader.Tensors(tag):
                steps.append(int(e.step))
                values.append(float(tensor_util.make_ndarray(e.tensor_proto)))
        return steps, values
        """,
        check="2",
        expect=r"raised KeyError: .*a file that does not hold the tag",
    ),
    Wrong(
        3,
        "divided by the first replica's batch times the replicas",
        _loop(
            loss="strategy.reduce(tf.distribute.ReduceOp.SUM, per_example, axis=0) / tf.cast("
            "strategy.num_replicas_in_sync * "
            "tf.shape(strategy.experimental_local_results(x)[0])[0], tf.float32)"
        ),
        check="3",
        expect=r"on 2 replica\(s\).*at step 2 .*right on the full batches, wrong on the last one",
    ),
    Wrong(
        3,
        "the iterations variable, not its value before the update",
        _loop(at="optimizer.iterations"),
        check="3",
        expect=r"you logged steps \[8, 9, 10\], expected \[7, 8, 9\]: each is one ahead",
    ),
    Wrong(
        3,
        "the last loss written again at the end",
        _loop()
        + "with writer.as_default():\n"
        + '    tf.summary.scalar("loss", 0.0, step=optimizer.iterations - 1)',
        check="3",
        expect=r"you wrote 2 losses at step 9",
    ),
    Wrong(
        3,
        "replica_step run twice",
        _loop().replace(
            "    per_example = strategy.run(",
            "    strategy.run(replica_step, args=(x, y))\n    per_example = strategy.run(",
        ),
        check="3",
        expect=r"you logged steps \[7, 9, 11\], expected \[7, 8, 9\]",
    ),
    Wrong(
        3,
        "the writer closed, not flushed",
        _loop(flush="writer.close()"),
        check="3",
        expect=r"train_and_log closed the writer it was given",
    ),
    # a second red team
    Wrong(
        2,
        "every tag that ends with the name",
        """
        reader = event_accumulator.EventAccumulator(
            str(folder), size_guidance={event_accumulator.TENSORS: 0}
        )
        reader.Reload()
        tags = [t for t in reader.Tags()["tensors"] if t.endswith(tag)]
        events = sorted((e for t in tags for e in reader.Tensors(t)), key=lambda e: e.step)
        return [int(e.step) for e in events], [
            float(tensor_util.make_ndarray(e.tensor_proto)) for e in events
        ]
        """,
        check="2",
        expect=r"you return 350 \(step, value\) pair\(s\) never written under this tag",
    ),
    Wrong(
        3,
        "the loss under a scope of its own",
        _loop(write=_WRITE.replace('"loss"', '"train/loss"')),
        check="3",
        expect=r"the writer holds no scalar tagged 'loss'",
    ),
    # a third red team
    Wrong(
        2,
        "a size_guidance of 10000",
        _reader(guidance=", size_guidance={event_accumulator.TENSORS: 10000}"),
        check="2",
        expect=r"read 10000 of the 10500 values written",
    ),
    Wrong(
        2,
        "one value a step (a dict by step)",
        _reader(
            order="list({{e.step: e for e in sorted(reader.{method}(tag), "
            "key=lambda e: e.step)}}.values())"
        ),
        check="2",
        expect=r"read_scalars\('eval', 'eval/loss'\): 25 values at the 25 steps, of the 38 "
        r"written: a run restarted from a checkpoint logs some steps again",
    ),
    Wrong(
        2,
        "repeated (step, value) pairs dropped (a set)",
        _reader().replace(
            "return steps, values",
            "pairs = sorted(set(zip(steps, values)))\n"
            "return [s for s, _ in pairs], [v for _, v in pairs]",
        ),
        check="2",
        expect=r"36 values at the 25 steps, of the 38 written: .*nor one of each pair \(a set\)",
    ),
    Wrong(
        3,
        "divided by the global batch size, a constant",
        _loop(loss="strategy.reduce(tf.distribute.ReduceOp.SUM, per_example, axis=0) / 12.0"),
        check="3",
        expect=r"on 1 replica\(s\), the optimizer at step 7: at step 9 .*right on the full "
        r"batches, wrong on the last one \(7 examples\): average over the examples",
    ),
    Wrong(
        3,
        "flushed, then left as the default writer",
        _loop(flush="writer.set_as_default()\nwriter.flush()"),
        check="3",
        expect=r"left its writer as TensorFlow's default writer \(set_as_default\)",
    ),
]
