"""Wrong answers for exercises/06_tensorboard.ipynb (table format: base.py)."""

import textwrap

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "06_tensorboard.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
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
reader = event_accumulator.EventAccumulator(str(folder){guidance})
{reload}
events = reader.{method}(tag)
steps = [int(e.step) for e in events]
values = [{value} for e in events]
return steps, values
"""


def _reader(
    guidance=", size_guidance={event_accumulator.TENSORS: 0}",
    reload="reader.Reload()",
    method="Tensors",
    value="float(tensor_util.make_ndarray(e.tensor_proto))",
):
    return _READER.format(guidance=guidance, reload=reload, method=method, value=value)


# The solution's counter with the filter or the key swapped.
_COUNTER = """
counts = {{}}
for op in placed:
    if {keep}:
        spec = tf.DeviceSpec.from_string(op.device)
        key = {key}
        counts[key] = counts.get(key, 0) + 1
return counts
"""


def _counter(
    keep='"Conv2D" in op.type and "Backprop" not in op.type',
    key="(spec.device_type, spec.device_index)",
):
    return _COUNTER.format(keep=keep, key=key)


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
        r"scopes \['conv1_kernel', 'shifted_kernel'\]",
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
        "summaries.variable_summaries(values, name=name, step=step)",
        check="1",
        expect=r"calls dpkit's summaries.variable_summaries: write the summaries yourself",
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
        expect=r"left TensorFlow's default summary step at 3 \(it was None\)",
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
        expect=r"read 10 of the 150 values written: .*as many as size_guidance says",
    ),
    Wrong(
        2,
        "size_guidance for scalars",
        _reader(guidance=", size_guidance={event_accumulator.SCALARS: 0}"),
        check="2",
        expect=r"read 10 of the 150 values written: .*the kind of event a scalar is stored as",
    ),
    Wrong(
        2,
        "Scalars instead of Tensors",
        _reader(method="Scalars", value="e.value"),
        check="2",
        expect=r"raised KeyError .*TensorFlow 2 writes a scalar summary as a tensor event",
    ),
    Wrong(
        2,
        "no Reload",
        _reader(reload=""),
        check="2",
        expect=r"raised KeyError .*it has not read the files \(Reload\)",
    ),
    Wrong(
        2,
        "float_val of a tensor_content proto",
        _reader(value="e.tensor_proto.float_val[0]"),
        check="2",
        expect=r"read_scalars raised IndexError: .*its float_val list is empty",
    ),
    Wrong(
        2,
        "NumPy arrays, not numbers",
        _reader(value="tensor_util.make_ndarray(e.tensor_proto)"),
        check="2",
        expect=r"values holds numpy\.ndarray items: return plain Python numbers",
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
        steps, values = summaries.read(folder)["."].scalar(tag)
        return steps.tolist(), values.tolist()
        """,
        check="2",
        expect=r"read_scalars calls dpkit's summaries.read: read the files with TensorBoard's",
    ),
    Wrong(
        2,
        "a size_guidance of 100",
        _reader(guidance=", size_guidance={event_accumulator.TENSORS: 100}"),
        check="2",
        expect=r"read 100 of the 150 values written",
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
        "pairs sorted by value",
        _reader().replace(
            "return steps, values",
            "pairs = sorted(zip(steps, values), key=lambda p: p[1])\n"
            "return [p[0] for p in pairs], [p[1] for p in pairs]",
        ),
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
        expect=r"steps holds builtins\.float items \(0\.0\): a step is a whole number",
    ),
    Wrong(
        2,
        "the event files decoded by hand",
        """
        steps, values = [], []
        for path in sorted(tf.io.gfile.glob(f"{folder}/*tfevents*")):
            for event in tf.compat.v1.train.summary_iterator(str(path)):
                for v in event.summary.value:
                    if v.tag == tag:
                        steps.append(int(event.step))
                        values.append(float(tensor_util.make_ndarray(v.tensor)))
        return steps, values
        """,
        check="2",
        expect=r"read_scalars made no event_accumulator\.EventAccumulator",
    ),
    # 3. convolutions_per_device
    Wrong(
        3,
        "only the type Conv2D",
        _counter(keep='op.type == "Conv2D"'),
        check="3",
        expect=r"\('CPU', 0\): you found no convolutions; .*'_FusedConv2D'.*renames \(fuses\)",
    ),
    Wrong(
        3,
        "backprop convolutions counted",
        _counter(keep='"Conv2D" in op.type'),
        check="3",
        expect=r"\('CPU', 0\): 5 convolutions, expected 2: you also count the 3 backprop",
    ),
    Wrong(
        3,
        "keyed by the device string",
        _counter(key="op.device"),
        check="3",
        expect=r"your key '/job:localhost/replica:0/task:0/device:CPU:0', expected keys like "
        r"\('CPU', 0\): key by \(device_type, device_index\)",
    ),
    Wrong(
        3,
        "keyed by the device index",
        _counter(key="spec.device_index"),
        check="3",
        expect=r"your key 0, expected keys like \('CPU', 0\): key by \(device_type, device_index\)",
    ),
    Wrong(
        3,
        "conv in the op name",
        _counter(keep='"conv" in op.name'),
        check="3",
        expect=r"\('CPU', 0\): \d+ convolutions, expected 2",
    ),
    Wrong(
        3,
        "only the fused type",
        _counter(keep='op.type == "_FusedConv2D"'),
        check="3",
        expect=r"you count \{\}, expected \{\('CPU', 0\): 1\}: a Conv2D is a forward convolution",
    ),
    Wrong(
        3,
        "the device type in lower case",
        _counter(key="(spec.device_type.lower(), spec.device_index)"),
        check="3",
        expect=r"your key \('cpu', 0\).*DeviceSpec spells the device type 'CPU'",
    ),
    Wrong(
        3,
        "the index as text",
        _counter(key="tuple(op.device.split('device:')[-1].split(':'))"),
        check="3",
        expect=r"your key \('CPU', '0'\).*the index is a str",
    ),
]
