"""dpkit_checks.ex04's input-function check: a right answer passes, wrong ones fail saying
why. (The training-step check needs three devices, so a fresh process:
tests/course/test_exercise_checks_ex04.py.)"""

import pytest

from dpkit_checks import ex04


def _per_replica(context, global_batch):
    return context.get_per_replica_batch_size(global_batch)


def _make(per_replica=_per_replica, shard=True, batch=lambda dataset, size: dataset.batch(size)):
    """make_dataset_fn with one choice changed from the right answer."""

    def make_dataset_fn(features, labels, global_batch):
        import tensorflow as tf

        def dataset_fn(context):
            size = per_replica(context, global_batch)
            dataset = tf.data.Dataset.from_tensor_slices((features, labels))
            if shard:
                dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
            return batch(dataset, size)

        return dataset_fn

    return make_dataset_fn


def test_the_right_input_function_passes():
    assert ex04.check_dataset_fn(_make()).startswith("Check 1 passed")


def test_batching_after_sharding_or_before_both_pass():
    # batch, then give each pipeline every n-th batch: still each example once
    def make_dataset_fn(features, labels, global_batch):
        import tensorflow as tf

        def dataset_fn(context):
            size = context.get_per_replica_batch_size(global_batch)
            dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(size)
            return dataset.shard(context.num_input_pipelines, context.input_pipeline_id)

        return dataset_fn

    assert ex04.check_dataset_fn(make_dataset_fn).startswith("Check 1 passed")


@pytest.mark.parametrize(
    "answer, words",
    [
        (_make(shard=False), r"2 input pipeline\(s\), examples .* came 2 times in one epoch"),
        (_make(per_replica=lambda c, g: g), r"hold \[12, 12, 5\] examples; .* 12 / 2 = 6"),
        (_make(batch=lambda d, n: d.batch(n, drop_remainder=True)), r"5 of 29 examples never came"),
        (
            _make(per_replica=lambda c, g: g // c.num_input_pipelines),
            r"2 replica\(s\) and 1 input pipeline\(s\), pipeline 0: your batches hold",
        ),
        (_make(batch=lambda d, n: d.batch(n).repeat()), r"goes on past 87 examples"),
    ],
    ids=["no shard", "global batch", "drop remainder", "per worker", "repeat"],
)
def test_wrong_input_functions_fail_saying_why(answer, words):
    with pytest.raises(AssertionError, match=words):
        ex04.check_dataset_fn(answer)


def test_a_pair_given_as_labels_then_features_is_named():
    def make_dataset_fn(features, labels, global_batch):
        import tensorflow as tf

        def dataset_fn(context):
            size = context.get_per_replica_batch_size(global_batch)
            dataset = tf.data.Dataset.from_tensor_slices((labels, features))
            return dataset.shard(context.num_input_pipelines, context.input_pipeline_id).batch(size)

        return dataset_fn

    with pytest.raises(AssertionError, match=r"your pairs are \(labels, features\)"):
        ex04.check_dataset_fn(make_dataset_fn)


def test_an_error_in_the_answer_becomes_a_failed_check():
    def make_dataset_fn(features, labels, global_batch):
        def dataset_fn(context):
            raise KeyError("oops")

        return dataset_fn

    with pytest.raises(AssertionError, match=r"pipeline 0, your dataset_fn raised KeyError"):
        ex04.check_dataset_fn(make_dataset_fn)


def test_the_step_check_asks_for_three_devices():
    with pytest.raises(ValueError, match="set NUM_DEVICES to 3 or more"):
        ex04.check_train_step(lambda *args: None, ["/device:CPU:0"])
