"""What the scaling panel tests share: three learners' choices and dpkit.scaling's own
prediction for them, asked directly (the reference the panel is checked against)."""

from dpkit import cards, scaling


def reference(model, hardware, algorithm, devices, per_device_batch, overlap):
    """What dpkit.scaling predicts for the same choices, asked directly."""
    counts = [1]
    while counts[-1] < devices:
        counts.append(2 * counts[-1])
    return scaling.predict(
        cards.model_card(model),
        cards.HARDWARE[hardware],
        counts,
        per_device_batch=per_device_batch,
        algorithm=algorithm,
        overlap=overlap,
    )


CHOICES = [
    dict(
        model="vgg16",
        hardware="k80_10gbe",
        algorithm="parameter_server",
        devices=64,
        per_device_batch=32,
        overlap=0.3,
    ),
    dict(
        model="resnet50",
        hardware="p100_roce25",
        algorithm="ring",
        devices=1024,
        per_device_batch=64,
        overlap=0.0,
    ),
    dict(
        model="alexnet",
        hardware="dgx1",
        algorithm="hierarchical",
        devices=8,
        per_device_batch=512,
        overlap=1.0,
    ),
]
