"""Towers against independent references, on 1, 2, 3 and 4 devices (one child process each).

References: the gradient and the SGD update of one big batch on one device;
MirroredStrategy's custom loop on the same devices; the TF1 graph-mode tower trainer;
tf.add_n for the ring all-reduce; the model on the whole batch for make_parallel.
"""

import pytest

from tests.support import childproc


@pytest.fixture(scope="module", params=[1, 2, 3, 4], ids=lambda n: f"{n}dev")
def measured(request):
    code = "import json\nfrom tests.support.towers_child import measure\n"
    code += f"print(json.dumps(measure({request.param})))"
    return childproc.run(code, timeout=300) | {"asked": request.param}


def test_child_has_the_devices_asked_for(measured):
    assert measured["num_devices"] == measured["asked"]


@pytest.mark.parametrize(
    "key",
    [
        "gradient_vs_big_batch",
        "weights_vs_big_batch",
        "weights_vs_mirrored",
        "weights_vs_tf1",
        "batchnorm_weights_vs_mirrored",
        "batchnorm_statistics_vs_mirrored_replica_mean",
        "batchnorm_moving_mean_vs_big_batch",
        "weighted_vs_big_batch",
        "device0_vs_big_batch",
        "ring_vs_add_n",
        "make_parallel_vs_whole",
    ],
)
def test_agrees_with_reference(measured, key):
    assert measured[key]["ok"], f"{key}: {measured[key]['says']}"


@pytest.mark.parametrize("key", ["towers_on_their_devices", "ring_results_on_their_devices"])
def test_placement(measured, key):
    assert measured[key] is True
