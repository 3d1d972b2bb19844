"""What the cluster tests share: a task's final record, a checkpoint read back, a bar."""

# 200 asynchronous steps, each worker drawing its own data order, end anywhere from 0.83 to
# 0.95 here; untrained weights score 0.08
ASYNC_200_ACCURACY = 0.75


def final_record(group, name):
    return next(r for r in reversed(group.records[name]) if r.get("done"))


def read_checkpoint(logdir):
    """(w, b, global step) of the newest checkpoint, read by TensorFlow's reader."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(logdir)
    names = reader.get_variable_to_shape_map()
    key = {n.split("/")[0]: n for n in names if not n.startswith("_")}
    return (
        reader.get_tensor(key["w"]),
        reader.get_tensor(key["b"]),
        int(reader.get_tensor(key["global_step"])),
    )
