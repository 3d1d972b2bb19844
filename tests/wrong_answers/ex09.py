"""Wrong answers for exercises/09_predicting_scale.ipynb (table format: base.py)."""

from tests.wrong_answers.base import Wrong

#: The solution notebook this table is for.
NOTEBOOK = "09_predicting_scale.ipynb"
#: The wrong answer tests/course/test_grading.py hands in: it must lose one check's points.
HAND_IN = "parameters, not bytes"

# predict_step with its hidden part and its efficiency left open
_STEP = """
exchange = ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s)
hidden = {hidden}
seconds = compute_s + exchange - hidden
return seconds, {efficiency}
"""
_CAPPED = "min(overlap * exchange, 2 / 3 * compute_s)"


def _step(hidden=_CAPPED, efficiency="compute_s / seconds"):
    return _STEP.format(hidden=hidden, efficiency=efficiency)


# compare_with_published with its pieces left open
_COMPARE = """
nbytes = {nbytes}
compute_s = {compute}
link = {link}
_, predicted = predict_step(
    compute_s, row.devices, nbytes, link.bandwidth_bytes_per_s, link.latency_s, {overlap}
)
return predicted, {published}, {within}
"""
_PARTS = {
    "nbytes": "cards.model_card(row.model).gradient_bytes",
    "compute": "row.per_device_batch / row.one_device_examples_per_s",
    "link": "hardware.intra",
    "overlap": "overlap",
    "published": "row.efficiency",
    "within": "abs(predicted - row.efficiency) <= band",
}


def _compare(**changed):
    return _COMPARE.format(**(_PARTS | changed))


_ONE = r"1 device\(s\), 102 MB at 12 GB/s, latency 5 us: yours .* s; one device exchanges nothing"
_RING = "2 * (n - 1) / n * nbytes / bandwidth_bytes_per_s"

WRONG: list[Wrong] = [
    # 1. ring_seconds
    Wrong(
        1,
        "2 M bytes, and some for one device",
        "return 2 * nbytes / bandwidth_bytes_per_s + 2 * (devices - 1) * latency_s",
        check="1",
        expect=_ONE,
    ),
    Wrong(
        1,
        "2 M bytes without (N-1)/N",
        """
        if devices == 1:
            return 0.0
        return 2 * nbytes / bandwidth_bytes_per_s + 2 * (devices - 1) * latency_s
        """,
        check="1",
        expect=r"2 device\(s\), .*: the bytes are 2 M: each sends 2 \(N-1\)/N M",
    ),
    Wrong(
        1,
        "latency term dropped",
        f"n = devices\nreturn {_RING}",
        check="1",
        expect=r"2 device\(s\), .*: the latency term is missing",
    ),
    Wrong(
        1,
        "N-1 latencies",
        f"n = devices\nreturn {_RING} + (n - 1) * latency_s",
        check="1",
        expect=r"2 device\(s\), .*: \(N-1\) latencies; the ring sends 2 \(N-1\)",
    ),
    Wrong(
        1,
        "2 N latencies",
        f"n = devices\nreturn {_RING} + 2 * n * latency_s",
        check="1",
        expect=_ONE,
    ),
    Wrong(
        1,
        "one phase only",
        f"n = devices\nreturn {_RING.replace('2 * ', '', 1)} + 2 * (n - 1) * latency_s",
        check="1",
        expect=r"2 device\(s\), .*: the bytes miss the factor 2",
    ),
    Wrong(
        1,
        "dpkit's ring_bytes",
        """
        from dpkit import scaling

        moved = scaling.ring_bytes(devices, nbytes)
        return moved / bandwidth_bytes_per_s + 2 * (devices - 1) * latency_s
        """,
        check="1",
        expect=r"your code calls dpkit's scaling\.ring_bytes",
    ),
    Wrong(
        1,
        "a Link does the alpha-beta sum",
        """
        from dpkit import scaling

        n = devices
        link = scaling.Link(latency_s, bandwidth_bytes_per_s)
        return link.seconds(2 * (n - 1) / n * nbytes, 2 * (n - 1))
        """,
        check="1",
        expect=r"your code calls dpkit's Link\.seconds",
    ),
    Wrong(
        1,
        "a tree's latency",
        """
        import math

        n = devices
        hops = 2 * math.ceil(math.log2(n))
        return 2 * (n - 1) / n * nbytes / bandwidth_bytes_per_s + hops * latency_s
        """,
        check="1",
        expect=r"8 device\(s\), 553 MB at 20 GB/s, latency 5 us: yours 48\.42 ms, want 48\.46 ms",
    ),
    Wrong(
        1,
        "the larger of the two terms, not their sum",
        """
        n = devices
        return max(2 * (n - 1) / n * nbytes / bandwidth_bytes_per_s, 2 * (n - 1) * latency_s)
        """,
        check="1",
        expect=r"2 device\(s\), .*: yours 8\.5 ms, want 8\.51 ms: the latency term is missing",
    ),
    # 2. predict_step
    Wrong(
        2,
        "efficiency is the speed-up",
        _step(efficiency="devices * compute_s / seconds"),
        check="2",
        expect=r"compute 280 ms, 8 device\(s\).*: efficiency 6\.6431, want 0\.8304: that is the "
        r"speed-up",
    ),
    Wrong(
        2,
        "hidden part not capped",
        _step(hidden="overlap * exchange"),
        check="2",
        expect=r"compute 20 ms, 4 device\(s\).*: step .*: nothing caps the hidden part",
    ),
    Wrong(
        2,
        "capped by the whole compute",
        _step(hidden="min(overlap * exchange, compute_s)"),
        check="2",
        expect=r"compute 20 ms, 4 device\(s\).*: the cap is the whole compute",
    ),
    Wrong(
        2,
        "overlap ignored",
        _step(hidden="0.0"),
        check="2",
        expect=r"compute 280 ms, 16 device\(s\).*overlap 0\.5: step .*: the overlap is ignored",
    ),
    Wrong(
        2,
        "overlap read as the exposed share",
        _step(hidden="min((1 - overlap) * exchange, 2 / 3 * compute_s)"),
        check="2",
        expect=r"compute 280 ms, 8 device\(s\).*default: step .*: overlap is the share that "
        r"hides",
    ),
    Wrong(
        2,
        "one device pays for an exchange",
        """
        exchange = 2 * nbytes / bandwidth_bytes_per_s + 2 * devices * latency_s
        hidden = min(overlap * exchange, 2 / 3 * compute_s)
        seconds = compute_s + exchange - hidden
        return seconds, compute_s / seconds
        """,
        check="2",
        expect=r"compute 280 ms, 1 device\(s\).*: one device exchanges nothing: its step is the "
        r"compute alone",
    ),
    Wrong(
        2,
        "efficiency divided by N again",
        _step(efficiency="compute_s / seconds / devices"),
        check="2",
        expect=r"8 device\(s\).*: efficiency 0\.1\d+.*not divided by N again",
    ),
    Wrong(
        2,
        "the backward pass a third of the compute",
        _step(hidden="min(overlap * exchange, compute_s / 3)"),
        check="2",
        expect=r"compute 20 ms, 4 device\(s\).*overlap 1: step 75\.14 ms, want 68\.48 ms",
    ),
    Wrong(
        2,
        "dpkit's step_seconds",
        """
        from dpkit import scaling

        exchange = ring_seconds(devices, nbytes, bandwidth_bytes_per_s, latency_s)
        seconds = float(scaling.step_seconds(compute_s, exchange, overlap))
        return seconds, compute_s / seconds
        """,
        check="2",
        expect=r"your code calls dpkit's scaling\.step_seconds",
    ),
    Wrong(
        2,
        "the check's own step",
        """
        from dpkit_checks import ex09

        return ex09.step(compute_s, devices, nbytes, bandwidth_bytes_per_s, latency_s, overlap)
        """,
        check="2",
        expect=r"your code calls dpkit's ex09\.step",
    ),
    Wrong(
        2,
        "efficiency leaves the hidden part out",
        _step(efficiency="compute_s / (compute_s + exchange)"),
        check="2",
        expect=r"compute 280 ms, 16 device\(s\).*overlap 0\.5: efficiency 0\.8203, want 0\.9013$",
    ),
    # 3. compare_with_published
    Wrong(
        3,
        "parameters, not bytes",
        _compare(nbytes="cards.model_card(row.model).params"),
        check="3",
        expect=r"VGG-16 on 8 GPUs .*: predicted .*: the bytes are the parameter count",
    ),
    Wrong(
        3,
        "compute from FLOPs",
        _compare(
            compute="row.per_device_batch * cards.model_card(row.model).train_flops "
            "/ hardware.device_flops_per_s"
        ),
        check="3",
        expect=r"VGG-16 on 8 GPUs .*: the compute comes from FLOPs",
    ),
    Wrong(
        3,
        "one example's compute",
        _compare(compute="1 / row.one_device_examples_per_s"),
        check="3",
        expect=r"VGG-16 on 8 GPUs .*: the compute is one example's",
    ),
    Wrong(
        3,
        "the host link",
        _compare(link="hardware.link_to_host()"),
        check="3",
        expect=r"VGG-16 on 8 GPUs .*: the link is the host's",
    ),
    Wrong(
        3,
        "published speed-up",
        _compare(published="row.efficiency * row.devices"),
        check="3",
        expect=r"VGG-16 on 8 GPUs .*: published 7\.\d+, .*: that is the published speed-up",
    ),
    Wrong(
        3,
        "band as a share of the published",
        _compare(within="abs(predicted / row.efficiency - 1) <= band"),
        check="3",
        expect=r"VGG-16 on 8 GPUs \(batch 32\), DGX-1 with slower links, overlap 0\.25, band "
        r"0\.04: yours says within=False.*not a share of the published",
    ),
    Wrong(
        3,
        "overlap not passed on",
        _compare(overlap="0.0"),
        check="3",
        expect=r"AlexNet on 8 GPUs .*overlap 0\.25.*: the overlap asked for is not used",
    ),
    Wrong(
        3,
        "a band on one side only",
        _compare(within="predicted - row.efficiency <= band"),
        check="3",
        expect=r"VGG-16 on 8 GPUs \(batch 64\), GCE server \(8 K80 GPUs\), overlap 0, band 0\.05: "
        r"yours says within=True.*the band holds on both sides",
    ),
    Wrong(
        3,
        "the verdict as words",
        _compare(within='"within" if abs(predicted - row.efficiency) <= band else "outside"'),
        check="3",
        expect=r"VGG-16 on 8 GPUs .*: within is 'within'; say True or False",
    ),
    Wrong(
        3,
        "a gap equal to the band is outside",
        _compare(within="abs(predicted - row.efficiency) < band"),
        check="3",
        expect=r"ResNet-50 on 1 GPU \(batch 32\), .*band 0: yours says within=False; the "
        r"prediction is 0\.0 points from the published, the band 0: .*\(<=, not <\)",
    ),
    Wrong(
        3,
        "the link between servers",
        _compare(link="hardware.inter"),
        check="3",
        expect=r"VGG-16 on 8 GPUs .*: raised AttributeError: 'NoneType' object has no attribute "
        r"'bandwidth_bytes_per_s'",
    ),
    Wrong(
        3,
        "efficiencies rounded before the band",
        _compare(within="abs(round(predicted, 2) - round(row.efficiency, 2)) <= band"),
        check="3",
        # no hint: a band read as a share of the published gives this verdict, but not all
        expect=r"VGG-16 on 8 GPUs \(batch 32\), DGX-1 with slower links, overlap 0\.25, band "
        r"0\.04: yours says within=False; the prediction is 3\.7 points from the published, "
        r"the band 4$",
    ),
    # issue 46: the cap now binds below full overlap too
    Wrong(
        2,
        "the overlap applied after the cap",
        _step(hidden="overlap * min(exchange, 2 / 3 * compute_s)"),
        check="2",
        expect=r"compute 12 ms, 3 device\(s\).*overlap 0\.75: step 21\.46 ms, want 19\.46 ms: the "
        r"overlap multiplies what is left after the cap",
    ),
]
