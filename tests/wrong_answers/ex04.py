"""Wrong answers for exercises/04_all_reduce_and_mirrored.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "04_all_reduce_and_mirrored.ipynb"
#: The wrong answer tests/notebooks/test_grading.py hands in: it must lose one check's points.
HAND_IN = "sum on device 0 and copy back"

WRONG: list[Wrong] = [
    # 1. ring_all_reduce
    Wrong(
        1,
        "sum on device 0 and copy back",
        """
        with tf.device(devices[0]):
            total = tf.add_n(tensors)
        results = []
        for device in devices:
            with tf.device(device):
                results.append(tf.identity(total))
        return results
        """,
        check="1",
        expect=r"device 0 sends 384 bytes, 3\.00 times the tensor",
    ),
    Wrong(
        1,
        "every device sums everything",
        """
        results = []
        for device in devices:
            with tf.device(device):
                results.append(tf.add_n(tensors))
        return results
        """,
        check="1",
        expect=r"sends 384 bytes, 3\.00 times the tensor",
    ),
    Wrong(
        1,
        "whole tensors passed round the ring",
        """
        n = len(devices)
        partial = tensors[0]
        for i in range(1, n):  # reduce along the ring, whole tensors
            with tf.device(devices[i]):
                partial = partial + tensors[i]
        results = [None] * n
        results[n - 1] = partial
        for step in range(n - 1):  # and broadcast it on round the ring
            i = step % n
            with tf.device(devices[i]):
                results[i] = tf.identity(results[(i - 1) % n])
        return results
        """,
        check="1",
        expect=r"sends 256 bytes, 2\.00 times the tensor",
    ),
    Wrong(
        1,
        "reduce-scatter without the all-gather",
        """
        n, shape = len(devices), tensors[0].shape
        sizes = [len(c) for c in np.array_split(np.arange(shape.num_elements()), n)]
        chunks = []
        for device, t in zip(devices, tensors):
            with tf.device(device):
                chunks.append(tf.split(tf.reshape(t, [-1]), sizes))
        for step in range(n - 1):
            sent = [chunks[i][(i - step) % n] for i in range(n)]
            for i in range(n):
                with tf.device(devices[(i + 1) % n]):
                    c = (i - step) % n
                    chunks[(i + 1) % n][c] = chunks[(i + 1) % n][c] + sent[i]
        results = []
        for device, row in zip(devices, chunks):
            with tf.device(device):
                results.append(tf.reshape(tf.concat(row, 0), shape))
        return results
        """,
        check="1",
        expect=r"output 0 is not the sum",
    ),
    Wrong(
        1,
        "equal chunks",
        """
        n, shape = len(devices), tensors[0].shape
        chunks = []
        for device, t in zip(devices, tensors):
            with tf.device(device):
                chunks.append(tf.split(tf.reshape(t, [-1]), n))
        return [tf.reshape(tf.concat(row, 0), shape) for row in chunks]
        """,
        check="1",
        expect=r"for 35 elements on 4 devices ring_all_reduce raised InvalidArgumentError",
    ),
    Wrong(
        1,
        "summed in NumPy",
        """
        total = np.sum([t.numpy() for t in tensors], axis=0)
        results = []
        for device in devices:
            with tf.device(device):
                results.append(tf.constant(total))
        return results
        """,
        check="1",
        expect=r"cannot be traced as a graph .*: compute with TensorFlow ops",
    ),
    Wrong(
        1,
        "dpkit's ring_all_reduce",
        """
        from dpkit import gradients as library

        return library.ring_all_reduce(tensors, devices)
        """,
        check="1",
        expect=r"your code calls dpkit's gradients.ring_all_reduce",
    ),
]
