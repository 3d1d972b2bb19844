"""The cost model of dpkit.scaling against hand-computed cases, the model cards against Keras
and hand-counted layer shapes, and dpkit.published's fit against the published figures.

Every expected number is worked out here by hand (written as the arithmetic that gives it),
never by calling the code under test. One Keras model is built (ResNet-50, a few seconds).
"""

import math

import pytest

from dpkit import cards, published, scaling
from dpkit.scaling import Hardware, Link, ModelCard
from tests.support.scaling_cases import CLUSTER, INTRA, MODEL, ONE_NODE, M, approx

# ------------------------------------------------------------------- bytes on the busiest link


def test_ring_bytes():
    assert scaling.ring_bytes(4, 100) == approx(150)  # 2 * 3/4 * 100
    assert scaling.ring_bytes(2, 100) == approx(100)  # 2 * 1/2 * 100: send half, twice
    assert scaling.ring_bytes(8, 800) == approx(1400)  # 2 * 7/8 * 800
    assert scaling.ring_bytes(1, 100) == 0
    assert scaling.ring_bytes(1, 0) == 0


def test_ps_bytes_with_servers_on_machines_of_their_own():
    assert scaling.ps_bytes(8, M, 2) == approx(2 * M * 4)  # a server takes 8 pushes of M/2
    assert scaling.ps_bytes(2, M, 8) == approx(2 * M)  # the workers' own links: push, pull
    assert scaling.ps_bytes(4, M, 4) == approx(2 * M)
    assert scaling.ps_bytes(1, M) == approx(2 * M)


def test_ps_bytes_with_servers_on_the_worker_machines():
    # k = W = 4: a machine pushes 3 of its 4 shards and receives 3 pushes of its own shard
    assert scaling.ps_bytes(4, M, 4, colocated=True) == approx(2 * M * 3 / 4)
    # 8 workers, 6 servers: a server machine receives 7 pushes of M/6 (more than the M that
    # a worker without a server sends)
    assert scaling.ps_bytes(8, M, 6, colocated=True) == approx(2 * M * 7 / 6)
    assert scaling.ps_bytes(1, M, 1, colocated=True) == 0  # nothing crosses the network


# ---------------------------------------------------------------------------- exchange time


def test_ring_inside_one_node_pays_2_n_minus_1_latencies():
    ex = scaling.exchange("ring", 4, M, ONE_NODE)
    assert ex.latency_s == approx(2 * 3 * 1e-6)
    assert ex.bandwidth_s == approx(2 * 3 / 4 * 1e8 / 1e10)  # 15 ms
    assert ex.seconds == approx(6e-6 + 0.015)
    # hierarchical on one node is the same ring
    assert scaling.exchange("hierarchical", 4, M, ONE_NODE).seconds == approx(6e-6 + 0.015)


def test_one_device_exchanges_nothing():
    for algorithm in scaling.ALGORITHMS:
        ex = scaling.exchange(algorithm, 1, M, CLUSTER)
        assert (ex.latency_s, ex.bandwidth_s) == (0, 0)


def test_flat_ring_across_nodes_runs_at_the_slower_link():
    ex = scaling.exchange("ring", 8, M, CLUSTER)  # 2 nodes of 4
    assert ex.latency_s == approx(2 * 7 * 1e-4)
    assert ex.bandwidth_s == approx(2 * 7 / 8 * 1e8 / 1e9)  # 175 ms


def test_hierarchical_is_a_ring_in_the_node_then_a_ring_of_nodes():
    ex = scaling.exchange("hierarchical", 8, M, CLUSTER)
    assert ex.latency_s == approx(2 * 3 * 1e-6 + 2 * 1 * 1e-4)
    assert ex.bandwidth_s == approx(2 * 3 / 4 * 1e8 / 1e10 + 2 * 1 / 2 * 1e8 / 1e9)  # 15 + 100 ms
    ex = scaling.exchange("hierarchical", 16, M, CLUSTER)  # 4 nodes
    assert ex.latency_s == approx(6e-6 + 2 * 3 * 1e-4)
    assert ex.bandwidth_s == approx(0.015 + 2 * 3 / 4 * 1e8 / 1e9)


def test_parameter_server_on_one_node_uses_the_host_link():
    ex = scaling.exchange("parameter_server", 4, M, ONE_NODE)
    assert ex.latency_s == approx(2 * 2e-6)  # push, pull
    assert ex.bandwidth_s == approx(2 * 1e8 / 5e9)  # 40 ms
    no_host = Hardware("no host link", 1e12, devices_per_node=8, intra=INTRA)
    assert scaling.exchange("parameter_server", 4, M, no_host).bandwidth_s == approx(2e8 / 1e10)


def test_parameter_server_across_nodes_sums_in_the_node_then_pushes_over_the_network():
    # 2 nodes: a ring of 4 in each node, then each node pushes to and pulls from the servers
    ex = scaling.exchange("parameter_server", 8, M, CLUSTER)  # one server per node
    assert ex.latency_s == approx(2 * 3 * 1e-6 + 2 * 1e-4)
    assert ex.bandwidth_s == approx(0.015 + 2 * 1e8 / 1e9)
    ex = scaling.exchange("parameter_server", 8, M, CLUSTER, servers=1)  # both nodes -> 1 server
    assert ex.bandwidth_s == approx(0.015 + 2 * 1e8 * 2 / 1e9)
    ex = scaling.exchange("parameter_server", 8, M, CLUSTER, servers=2, colocated=True)
    assert ex.bandwidth_s == approx(0.015 + 2 * 1e8 * 1 / 2 / 1e9)


# ------------------------------------------------------------------------------------ step


def test_compute_is_three_forward_passes_at_the_device_rate():
    s = scaling.step(MODEL, ONE_NODE, 1, 32)
    assert s.compute_s == approx(32 * 3 * 1e9 / 1e12)  # 96 ms
    assert s.exchange.seconds == 0 and s.seconds == approx(0.096)
    assert s.examples_per_s == approx(32 / 0.096)


def test_compute_from_a_measured_one_device_rate():
    s = scaling.step(MODEL, ONE_NODE, 4, 32, one_device_examples_per_s=200)
    assert s.compute_s == approx(32 / 200)
    assert s.seconds == approx(0.16 + 6e-6 + 0.015)
    assert s.examples_per_s == approx(4 * 32 / 0.175006)


# two devices on one node, no latency: the ring sends M = 1e8 bytes at 1 GB/s, 100 ms
PAIR = Hardware("pair", 1e12, devices_per_node=2, intra=Link(0, 1e9))


@pytest.mark.parametrize(
    "overlap, hidden",
    [
        (0.0, 0.0),
        (0.5, 0.5 * 0.1),  # half the 100 ms exchange hides behind the 64 ms backward pass
        (1.0, 2 / 3 * 0.096),  # not more than the backward pass: 2/3 of the 96 ms compute
    ],
)
def test_overlap_hides_at_most_the_backward_pass(overlap, hidden):
    s = scaling.step(MODEL, PAIR, 2, 32, overlap=overlap)
    assert s.compute_s == approx(0.096)
    assert s.exchange.bandwidth_s == approx(0.1)
    assert s.hidden_s == approx(hidden)
    assert s.exposed_s == approx(0.1 - hidden)
    assert s.seconds == approx(0.096 + 0.1 - hidden)


def test_dominant_term():
    slow = Link(1e-3, 1.25e9)  # 1 ms per message, 10 Gbit/s
    slow_hw = Hardware("slow", 1e15, devices_per_node=8, intra=slow)
    tiny = ModelCard("tiny", params=1000, forward_flops=1e3)
    # 14 ms of latency against 2 * 7/8 * 4000 B / 1.25 GB/s = 5.6 us of bandwidth
    assert scaling.step(tiny, slow_hw, 8, 64).dominant == "latency"
    vgg = ModelCard("VGG-sized", params=138_000_000, forward_flops=15.5e9)
    # 2 * 7/8 * 552 MB / 1.25 GB/s = 0.77 s against 14 ms latency and 3 ms compute
    assert scaling.step(vgg, slow_hw, 8, 64).dominant == "bandwidth"
    big = ModelCard("big compute", params=1000, forward_flops=1e14)
    # 64 * 3e14 / 1e15 = 19.2 s of compute
    assert scaling.step(big, slow_hw, 8, 64).dominant == "compute"
    # hiding the whole exchange behind a long backward pass leaves compute on top
    assert scaling.step(vgg, slow_hw, 8, 64, overlap=1.0).dominant == "bandwidth"
    assert scaling.step(vgg, slow_hw, 1, 64).dominant == "compute"


# ---------------------------------------------------------------------------------- predict

# one device computes 10 examples in 100 ms; the ring moves M at 1 GB/s: exchange(n) =
# 2 (n-1)/n * 0.1 s, so the step is 0.2 s on 2 devices, 0.25 s on 4, 0.275 s on 8.
RATE = dict(one_device_examples_per_s=100)
RING = Hardware("ring", 1e12, devices_per_node=8, intra=Link(0, 1e9))


def test_weak_scaling_keeps_the_batch_per_device():
    p = scaling.predict(MODEL, RING, [2, 4, 8], per_device_batch=10, **RATE)
    assert p.scaling == "weak"
    assert [s.per_device_batch for s in p.steps] == [10, 10, 10]
    assert [s.seconds for s in p.steps] == [approx(0.2), approx(0.25), approx(0.275)]
    assert p.speedup(2) == approx(1)
    assert p.speedup(4) == approx((40 / 0.25) / (20 / 0.2))  # 1.6
    assert p.efficiency(2) == approx(1)
    assert p.efficiency(4) == approx(1.6 * 2 / 4)
    assert p.efficiency(8) == approx(0.2 / 0.275)  # weak scaling: step(base) / step(n)
    last = p.table().splitlines()[-1].split()
    assert last[0] == "8" and last[-2] == "73%"  # 8/11


def test_strong_scaling_shares_the_global_batch():
    p = scaling.predict(MODEL, RING, [1, 2, 4], global_batch=40, **RATE)
    assert p.scaling == "strong"
    assert [s.per_device_batch for s in p.steps] == [40, 20, 10]
    # 0.4 s on one device; 0.2 + 0.1 on 2; 0.1 + 0.15 on 4: all steps take 40 examples
    assert [s.seconds for s in p.steps] == [approx(0.4), approx(0.3), approx(0.25)]
    assert p.speedup(1) == approx(1)
    assert p.speedup(4) == approx(0.4 / 0.25)
    assert p.efficiency(4) == approx(0.4 / 0.25 / 4)


def test_predict_takes_exactly_one_batch():
    for kwargs in ({}, {"per_device_batch": 10, "global_batch": 40}):
        with pytest.raises(ValueError, match="per_device_batch.*global_batch"):
            scaling.predict(MODEL, RING, [1, 2], **kwargs)


def test_servers_may_be_a_function_of_the_node_count():
    p = scaling.predict(
        MODEL, CLUSTER, [8], per_device_batch=1, algorithm="parameter_server", servers=lambda n: 1
    )
    assert p.steps[0].exchange.bandwidth_s == approx(0.015 + 2 * 1e8 * 2 / 1e9)


# ------------------------------------------------------------------------------- bad input

NAN = float("nan")


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: Link(-1e-6, 1e9), "latency_s"),
        (lambda: Link(NAN, 1e9), "latency_s"),
        (lambda: Link(1e-6, 0), "bandwidth_bytes_per_s"),
        (lambda: Link(1e-6, math.inf), "bandwidth_bytes_per_s"),
        (lambda: Hardware("h", NAN, 4, INTRA), "device_flops_per_s"),
        (lambda: Hardware("h", 1e12, 0, INTRA), "devices_per_node"),
        (lambda: ModelCard("m", 0, 1e9), "params"),
        (lambda: ModelCard("m", 10, -1.0), "forward_flops"),
        (lambda: scaling.step(MODEL, RING, 2, 8, overlap=1.5), "overlap"),
        (lambda: scaling.step(MODEL, RING, 2, 8, overlap=NAN), "overlap"),
        (lambda: scaling.step(MODEL, RING, 2, 8, overlap=-0.1), "overlap"),
        (lambda: scaling.step(MODEL, RING, 0, 8), "devices"),
        (lambda: scaling.step(MODEL, RING, 2, 0), "per_device_batch"),
        (lambda: scaling.step(MODEL, RING, 2, 8, one_device_examples_per_s=0), "examples_per_s"),
        (lambda: scaling.step(MODEL, RING, 2, 8, algorithm="allgather"), "algorithm"),
        (lambda: scaling.predict(MODEL, RING, [], per_device_batch=8), "devices"),
        (lambda: scaling.predict(MODEL, RING, [1, 0], per_device_batch=8), "device"),
        (lambda: scaling.predict(MODEL, RING, [1, 2], global_batch=NAN), "global_batch"),
        (lambda: scaling.predict(MODEL, RING, [1, 2], global_batch=0), "global_batch"),
        (lambda: scaling.ring_bytes(0, 100), "devices"),
        (lambda: scaling.ring_bytes(2, -1), "nbytes"),
        (lambda: scaling.ps_bytes(2, M, 3, colocated=True), "servers"),
        (lambda: scaling.ps_bytes(2, M, 0), "servers"),
        (lambda: scaling.exchange("ring", 16, M, ONE_NODE), "inter"),
        (lambda: scaling.exchange("hierarchical", 16, M, ONE_NODE), "inter"),
        (lambda: scaling.exchange("parameter_server", 16, M, ONE_NODE), "inter"),
        (lambda: scaling.exchange("parameter_server", 16, M, CLUSTER, servers=0), "servers"),
    ],
)
def test_bad_input_names_the_parameter(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_unknown_algorithm_lists_the_known_ones():
    with pytest.raises(ValueError, match="ring, parameter_server, hierarchical"):
        scaling.exchange("allreduce", 2, M, RING)


# ------------------------------------------------------------------------------ model cards


def test_resnet50_card_matches_keras():
    import keras

    model = keras.applications.ResNet50(weights=None)
    trainable = sum(w.value.numpy().size for w in model.trainable_weights)
    del model
    keras.backend.clear_session()
    card = cards.model_card("resnet50")
    assert card.params == trainable
    assert card.gradient_bytes == 4 * trainable
    # the literature gives 3.9 to 4.1 G multiply-adds per 224x224 image, 2 FLOPs each
    assert 2 * 3.9e9 * 0.98 <= card.forward_flops <= 2 * 4.1e9 * 1.02


def test_alexnet_card_counts_the_layer_shapes():
    # 227 -> conv 11/4: 55 -> pool 3/2: 27 -> pool: 13 -> pool: 6, so 6 * 6 * 256 = 9216 inputs
    expected = (
        (11 * 11 * 3 * 64 + 64)
        + (5 * 5 * 64 * 192 + 192)
        + (3 * 3 * 192 * 384 + 384)
        + (3 * 3 * 384 * 384 + 384)
        + (3 * 3 * 384 * 256 + 256)
        + (9216 * 4096 + 4096)
        + (4096 * 4096 + 4096)
        + (4096 * 1000 + 1000)
    )
    assert expected == 61_838_248
    assert cards.model_card("alexnet").params == expected


def test_every_card_has_a_display_name_and_a_source():
    for name in cards.PUBLISHED_MODELS:
        card = cards.model_card(name)
        assert card.name == cards.DISPLAY[name] and card.source
    with pytest.raises(ValueError, match="resnet50"):
        cards.model_card("resnet")


# ---------------------------------------------------------------- published figures and fit


@pytest.fixture(scope="module")
def comparison():
    return published.compare()


def test_the_split_fits_the_two_smallest_counts_of_every_series():
    series = {}
    for r in published.rows():
        series.setdefault((r.setup, r.model), []).append(r)
    assert len(series) == 27  # 5 + 4 + 5 + 5 models on single servers, 3 + 2 on clusters, Horovod
    for (setup, model), rows in series.items():
        if setup == "horovod":  # one device count: all fit, none held out
            assert all(r.fit for r in rows)
            continue
        counts = sorted(r.devices for r in rows)
        assert [r.devices for r in rows if r.fit] == counts[:2], (setup, model)
        assert len(counts) > 2  # something is held out
    setups = {r.setup for r in published.rows()}
    assert setups == set(published.SETUPS)


def test_new_tables_as_published():
    found = {(r.setup, r.model, r.devices): r for r in published.rows()}
    gce = found["gce_k80", "vgg16", 8]  # 234 images/s on 8 K80s against 35.4 on one
    assert gce.efficiency == approx(234 / 8 / 35.4) and gce.per_device_batch == 32
    aws = found["aws_k80", "resnet50", 8]
    assert aws.efficiency == approx(384 / 8 / 51.5) and aws.colocated
    assert not found["aws_k80", "inception_v3", 8].colocated
    b32 = found["k80_cluster_b32", "resnet50", 64]
    assert b32.efficiency == approx(2315 / 64 / 48.4) and b32.servers == 4
    assert found["k80_cluster_b32", "inception_v3", 64].servers == 6
    assert found["dgx1_b32", "vgg16", 8].algorithm == "ring"


def test_published_efficiencies_come_from_the_throughput_tables(comparison):
    row = next(
        r for r in comparison.rows if (r.setup, r.model, r.devices) == ("dgx1", "resnet50", 8)
    )
    assert row.efficiency == approx((1734 / 8) / 219) and not row.fit
    assert row.one_device_examples_per_s == 219


def _edited(table: dict, model: str, devices: int, rate: float) -> dict:
    copy = {m: dict(r) for m, r in table.items()}
    copy[model][devices] = rate
    return copy


def test_the_fit_never_sees_held_out_rows(comparison, monkeypatch):
    # ResNet-50 on 8 GPUs of the DGX-1 and on 64 K80s are held out: halve them
    monkeypatch.setattr(published, "TF_DGX1", _edited(published.TF_DGX1, "resnet50", 8, 1734 / 2))
    monkeypatch.setattr(
        published,
        "TF_K80_CLUSTER",
        _edited(published.TF_K80_CLUSTER, "resnet50", 64, 2744 / 2),
    )
    edited = published.compare()
    changed = [
        i
        for i, (a, b) in enumerate(zip(comparison.rows, edited.rows))
        if a.efficiency != b.efficiency
    ]
    assert len(changed) == 2  # the edit took effect, on held-out rows only
    assert not any(edited.rows[i].fit for i in changed)
    assert edited.params == comparison.params
    assert edited.predicted == comparison.predicted


def test_the_fit_follows_its_fit_rows(comparison, monkeypatch):
    # the fit can see its rows: AlexNet at 50% on 4 GPUs moves the DGX-1 parameters
    monkeypatch.setattr(
        published, "TF_DGX1", _edited(published.TF_DGX1, "alexnet", 4, 4 * 2987 / 2)
    )
    assert published.compare().params["dgx1"] != comparison.params["dgx1"]
