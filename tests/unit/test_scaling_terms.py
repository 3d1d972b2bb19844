"""The cost model's terms added for issue 32 (a tree across nodes, shared capacity that
saturates, variables spread over one node's devices, a fixed cost per step) against
hand-computed cases, and dpkit.published's grid, bands and baselines against the card
bounds and hand-worked examples. Expected numbers are written as the arithmetic that gives
them, never computed by the code under test."""

import functools
import math
from dataclasses import replace

import numpy as np
import pytest

from dpkit import cards, published, scaling
from dpkit.scaling import Hardware, Link
from tests.support.scaling_cases import CLUSTER, HOST, INTER, INTRA, MODEL, ONE_NODE, M, approx


def test_tree_bytes():
    assert scaling.tree_bytes(1, M) == 0
    assert scaling.tree_bytes(2, 100) == approx(200)  # reduce M up, broadcast M down
    assert scaling.tree_bytes(64, 100) == approx(200)  # whatever the node count


@pytest.mark.parametrize(
    "devices, hops",
    [(8, 2 * 1), (12, 2 * 2), (16, 2 * 2), (32, 2 * 3), (256, 2 * 6)],  # 2 ceil(log2 nodes)
)
def test_tree_across_nodes_pays_log_n_latencies(devices, hops):
    ex = scaling.exchange("tree", devices, M, CLUSTER)
    # a ring of 4 in each node: 2*3 messages of 1 us, 2*3/4*1e8 B at 10 GB/s = 15 ms;
    # then 2 M = 2e8 B over each node's 1 GB/s link = 200 ms
    assert ex.latency_s == approx(2 * 3 * 1e-6 + hops * 1e-4)
    assert ex.bandwidth_s == approx(0.015 + 0.2)


def test_tree_on_one_node_is_the_ring():
    assert scaling.exchange("tree", 4, M, CLUSTER).seconds == approx(6e-6 + 0.015)


def test_a_shared_network_saturates_as_nodes_are_added():
    shared = Hardware("shared", 1e12, 4, intra=INTRA, inter=INTER, network_total_bytes_per_s=2e9)
    # 2 nodes: 2e9 / 2 = 1e9 each, the link's own rate: as without a limit
    two = scaling.exchange("hierarchical", 8, M, shared)
    assert two.bandwidth_s == approx(0.015 + 2 * 1 / 2 * 1e8 / 1e9)
    # 8 nodes: 2e9 / 8 = 0.25 GB/s each: the ring of nodes moves 2 * 7/8 * 1e8 B at that rate
    eight = scaling.exchange("hierarchical", 32, M, shared)
    assert eight.bandwidth_s == approx(0.015 + 2 * 7 / 8 * 1e8 / 2.5e8)
    assert eight.latency_s == approx(6e-6 + 2 * 7 * 1e-4)  # latency unchanged
    flat = scaling.exchange("ring", 32, M, shared)  # flat ring: its slowest hop is 0.25 GB/s
    assert flat.bandwidth_s == approx(2 * 31 / 32 * 1e8 / 2.5e8)
    ps = scaling.exchange("parameter_server", 32, M, shared)  # 8 workers, 8 servers: 2 M each
    assert ps.bandwidth_s == approx(0.015 + 2 * 1e8 / 2.5e8)


def test_parameter_servers_on_the_cpu_saturate_the_host():
    node = Hardware("node", 1e12, 8, intra=INTRA, host=HOST, host_total_bytes_per_s=1e10)
    # 2 devices: 1e10 / 2 = 5 GB/s each, the host link's own rate: push and pull 2 M at 5 GB/s
    assert scaling.exchange("parameter_server", 2, M, node).bandwidth_s == approx(2e8 / 5e9)
    # 8 devices share 10 GB/s: 1.25 GB/s each
    assert scaling.exchange("parameter_server", 8, M, node).bandwidth_s == approx(2e8 / 1.25e9)
    assert scaling.exchange("parameter_server", 8, M, node).latency_s == approx(2 * 2e-6)
    # without a total, every count is the same (the old model's flat line)
    for n in (2, 8):
        assert scaling.exchange("parameter_server", n, M, ONE_NODE).bandwidth_s == approx(0.04)


def test_variables_spread_over_one_nodes_devices():
    # 4 devices, each serving a quarter: a device sends 3 of 4 shards and receives 3 pushes of
    # its own, then the same back: 2 * 3/4 * M over the 10 GB/s link, in 2 messages
    ex = scaling.exchange("parameter_server", 4, M, ONE_NODE, colocated=True)
    assert ex.bandwidth_s == approx(2 * 3 / 4 * 1e8 / 1e10)
    assert ex.latency_s == approx(2 * 1e-6)


PAIR = Hardware("pair", 1e12, devices_per_node=2, intra=Link(0, 1e9))


def test_a_fixed_cost_is_paid_by_every_step_of_more_than_one_device():
    # compute 32 * 3e9 / 1e12 = 96 ms; exchange 1e8 B at 1 GB/s = 100 ms; fixed 10 ms
    two = scaling.step(MODEL, PAIR, 2, 32, fixed_s=0.01)
    assert two.seconds == approx(0.096 + 0.1 + 0.01)
    assert two.parts["fixed"] == approx(0.01)
    assert scaling.step(MODEL, PAIR, 1, 32, fixed_s=0.01).seconds == approx(0.096)
    p = scaling.predict(MODEL, PAIR, [1, 2], per_device_batch=32, fixed_s=0.01)
    assert p.efficiency(2) == approx(0.096 / 0.206)


def test_step_seconds_takes_arrays():
    overlap = np.array([0.0, 0.5, 1.0])
    got = scaling.step_seconds(0.096, 0.1, overlap, 0.01)
    # hidden: 0, 50 ms, and at most the 64 ms backward pass
    want = [0.096 + 0.1 + 0.01, 0.096 + 0.05 + 0.01, 0.096 + 0.1 - 0.064 + 0.01]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: scaling.step(MODEL, PAIR, 2, 8, fixed_s=-1e-3), "fixed_s"),
        (lambda: Hardware("h", 1e12, 4, INTRA, host_total_bytes_per_s=0), "host_total"),
        (lambda: Hardware("h", 1e12, 4, INTRA, network_total_bytes_per_s=math.nan), "network"),
        (lambda: scaling.tree_bytes(0, M), "nodes"),
    ],
)
def test_bad_input_names_the_parameter(make, name):
    with pytest.raises(ValueError, match=name):
        make()


# ------------------------------------------------------------------ fits within the cards


def test_no_grid_value_leaves_the_hardware_card():
    for setup in published.SETUPS.values():
        values = published.grid(setup)
        for name, tried in values.items():
            card = published.card_value(setup, name)
            if name.endswith("_bw") or name.endswith("_total"):
                assert max(tried) <= card * (1 + 1e-12), (setup.name, name)
            if name.endswith("_lat"):
                assert min(tried) >= card * (1 - 1e-12), (setup.name, name)
    dgx1 = published.SETUPS["dgx1"]
    assert max(published.grid(dgx1)["host_bw"]) == 8e9  # the card's PCIe, not 16 GB/s
    with pytest.raises(ValueError, match="host_bw=1.6e"):
        published.hardware_with(dgx1, {"host_bw": 16e9})
    with pytest.raises(ValueError, match="intra_lat"):
        published.hardware_with(dgx1, {"intra_lat": 1e-7})  # faster than the card's 5 us
    with pytest.raises(ValueError, match="overlap"):
        published.check(dgx1, {"overlap": 1.5})


def test_the_grid_predictions_are_the_models():
    rows = [r for r in published.rows() if r.setup == "aws_k80"]
    points, table = published.predictions("aws_k80", rows)
    assert table.shape == (len(rows), len(points))
    for j in (0, len(points) // 3, len(points) - 1):
        for i in (0, 4, len(rows) - 1):
            reference = published.predict_row(rows[i], published.SETUPS["aws_k80"], points[j])
            assert table[i, j] == pytest.approx(reference, rel=1e-12)


def test_hold_and_score_by_hand():
    row = published.Row
    rows = [
        row("s", "dgx1", "vgg16", 2, 0.95, fit=True),
        row("s", "dgx1", "vgg16", 4, 0.90, fit=True),
        row("s", "dgx1", "vgg16", 8, 0.80),
    ]
    assert published.hold(rows) == [0.90, 0.90, 0.90]  # the largest fit count's, 4
    with pytest.raises(ValueError, match="no fit row"):
        published.hold(rows[2:])
    median, within = published.score([-2.0, 12.0, 5.0, -30.0])
    assert median == approx((5 + 12) / 2) and within == approx(2 / 4)


# ------------------------------------ a card's own network total: clusters of one-GPU nodes

#: 32 nodes of one GPU each, 100 Gbit/s (12.5 GB/s) per node, no latency, on a network whose
#: stated total carries all 32 nodes at their full link (400 GB/s)
ONE_GPU_NODES = Hardware(
    "32 one-GPU nodes",
    1e13,
    devices_per_node=1,
    intra=Link(0.0, 25e9),
    inter=Link(0.0, 12.5e9),
    network_total_bytes_per_s=32 * 12.5e9,
)


@pytest.fixture
def one_gpu_nodes(monkeypatch):
    """The card with its stated total, and the same card without one."""
    monkeypatch.setitem(cards.HARDWARE, "one_gpu_nodes", ONE_GPU_NODES)
    no_total = replace(ONE_GPU_NODES, network_total_bytes_per_s=None)
    monkeypatch.setitem(cards.HARDWARE, "one_gpu_nodes_no_total", no_total)
    setup = published.Setup("one-GPU nodes", "one_gpu_nodes", fitted=published.CLUSTER)
    return setup, replace(setup, hardware="one_gpu_nodes_no_total")


def test_the_network_bound_is_the_cards_own_total(one_gpu_nodes):
    stated, unstated = one_gpu_nodes
    assert published.card_value(stated, "net_total") == approx(400e9)  # 32 x 12.5 GB/s
    assert published.grid(stated)["net_total"] == [approx(v) for v in (50e9, 100e9, 200e9, 400e9)]
    assert published.card_value(unstated, "net_total") == approx(100e9)  # 8 nodes x 12.5 GB/s
    k80 = published.SETUPS["k80_cluster"]  # a card with no total: 8 machines at 10 Gbit/s
    assert published.card_value(k80, "net_total") == approx(8 * 10e9 / 8)
    published.check(stated, {"net_total": 400e9})
    with pytest.raises(ValueError, match="net_total=8e"):
        published.check(stated, {"net_total": 800e9})


def test_one_gpu_nodes_on_a_fat_network_keep_their_link(one_gpu_nodes):
    """ResNet-50 (25,583,592 float32 gradients), 64 images at a measured 640 images/s (0.1 s of
    compute), one ring over every GPU: at n nodes each sends 2 (n-1)/n M bytes over its
    12.5 GB/s link, or over total/n if that is less; nothing hidden, no fixed cost."""
    stated, unstated = one_gpu_nodes
    m = 25_583_592 * 4
    row = functools.partial(published.Row, "made up", "one_gpu_nodes", "resnet50")
    row = functools.partial(row, per_device_batch=64, one_device_examples_per_s=640.0)

    def efficiency(setup, devices):
        point = {"net_total": published.card_value(setup, "net_total")}
        return published.predict_row(row(devices, 1.0), setup, point)

    at_link = 2 * 31 / 32 * m / 12.5e9  # 400 GB/s over 32 nodes: each keeps its 12.5 GB/s
    assert efficiency(stated, 32) == approx(0.1 / (0.1 + at_link))
    squeezed = 2 * 31 / 32 * m / (100e9 / 32)  # 8 x 12.5 GB/s over 32 nodes: 3.125 GB/s each
    assert efficiency(unstated, 32) == approx(0.1 / (0.1 + squeezed))
    two = 2 * 1 / 2 * m / 12.5e9  # two nodes: neither total binds
    assert efficiency(stated, 2) == approx(0.1 / (0.1 + two)) == approx(efficiency(unstated, 2))


@pytest.fixture(scope="module")
def comparison():
    return published.compare()


def test_the_band_holds_the_best_fit_and_the_scores_are_on_held_out_rows(comparison):
    for p, (low, high) in zip(comparison.predicted, comparison.band):
        assert low - 1e-12 <= p <= high + 1e-12
    held = comparison.held_out()
    published_held = np.array([comparison.rows[i].efficiency for i in held])
    linear = np.median(np.abs(100 * (1 - published_held)))  # a guess of 100% everywhere
    assert comparison.scores()["linear"][0] == pytest.approx(linear, rel=1e-12)
    for f in comparison.fits.values():
        assert f.best in f.consistent


# ------------------------------------------------- DLPerf's tables: a second set and a final one


def test_dlperf_rows_are_the_tables_split_into_two_sets():
    second, final = published.new_rows("second"), published.new_rows("final")
    assert {r.setup for r in second}.isdisjoint({r.setup for r in final})
    assert sum(not r.fit for r in second) == 3 + 3 + 3 + 3 + 1  # 8-32 GPUs x 4, OneFlow's 32
    assert sum(not r.fit for r in final) == 3 + 2 + 2 + 2  # 8-32 GPUs; 16 and 32 three times
    for rows in (second, final):
        for key in {r.setup for r in rows}:
            counts = sorted(r.devices for r in rows if r.setup == key)
            assert [r.devices for r in rows if r.setup == key and r.fit] == counts[:2], key
    found = {(r.setup, r.devices): r for r in second + final}
    tf2 = found["dlperf_tf2", 32]  # 9418.44 images/s on 32 GPUs against 321.8 on one
    assert tf2.efficiency == approx(9418.44 / 32 / 321.8) and not tf2.fit
    assert tf2.per_device_batch == 128 and tf2.algorithm == "ring"
    assert found["dlperf_oneflow", 16].fit  # its counts are 8, 16, 32
    assert not {r.setup for r in published.rows()} & set(published.NEW_SETUPS)
    with pytest.raises(ValueError, match="second"):
        published.new_rows("lesson")


def test_the_v100_card_bounds_the_dlperf_fits():
    values = published.grid(published.NEW_SETUPS["dlperf_tf2"])
    assert max(values["inter_bw"]) == approx(100e9 / 8)  # EDR InfiniBand, 100 Gbit/s
    assert max(values["intra_bw"]) == approx(25e9)  # one NVLink 2 link, one direction
    assert min(values["inter_lat"]) == approx(5e-6)


# --------------------------------------------------------- Lambda's PCIe servers: a third set


def test_lambda_rows_are_the_tables_with_eight_gpus_held_out():
    third = published.new_rows("third")
    assert len({r.setup for r in third}) == 5 and len({r.model for r in third}) == 5
    assert [r.devices for r in third if not r.fit] == [8] * 25  # every series: 1, 2, 4, 8 GPUs
    assert {r.devices for r in third if r.fit} == {2, 4}
    found = {(r.setup, r.model, r.devices): r for r in third}
    # tf-train-throughput-fp32.csv: "8x A100 40GB PCIe" ResNet-50 7197 images/s, one GPU 953;
    # tf-train-bs-fp32.csv: a global batch of 1792 on 8 GPUs, 224 each
    a100 = found["lambda_a100_pcie", "resnet50", 8]
    assert a100.efficiency == approx(7197 / 8 / 953) and a100.per_device_batch == 224
    assert a100.algorithm == "ring" and a100.one_device_examples_per_s == 953
    vgg = found["lambda_3090", "vgg16", 8]  # kept as published: 254 images/s on 8, 325 on one
    assert vgg.efficiency == approx(254 / 8 / 325)
    sets = [{r.setup for r in published.new_rows(w)} for w in ("second", "final", "third")]
    assert not sets[2] & (sets[0] | sets[1] | {r.setup for r in published.rows()})
    with pytest.raises(ValueError, match="third"):
        published.new_rows("fifth")


def test_the_pcie_cards_bound_the_lambda_fits():
    """One direction of a PCIe x16 slot: 16 lanes x 8 GT/s (3.0) or 16 GT/s (4.0), 128b/130b."""
    for key, gigatransfers in (("lambda_2080ti", 8), ("lambda_a100_pcie", 16)):
        setup = published.NEW_SETUPS[key]
        values = published.grid(setup)
        assert max(values["intra_bw"]) == pytest.approx(
            16 * gigatransfers * 1e9 * 128 / 130 / 8, rel=1e-3
        )
        assert set(values) == {"intra_bw", "intra_lat", "overlap", "fixed"}  # one node, a ring
    with pytest.raises(ValueError, match="outside the card"):
        published.check(published.NEW_SETUPS["lambda_2080ti"], {"intra_bw": 20e9})


# ------------------------------------------- CSC's clusters: a fourth set, beyond one node


def test_csc_rows_fit_inside_one_node_and_hold_out_two_nodes():
    fourth = published.new_rows("fourth")
    assert len({r.setup for r in fourth}) == 20 and {r.model for r in fourth} == {"resnet50"}
    held = [r for r in fourth if not r.fit]
    assert len(held) == 20
    for r in fourth:  # 4 GPUs a node on Puhti and Mahti, 8 dies on LUMI
        per_node = 8 if "lumi" in r.setup else 4
        assert r.fit == (r.devices <= per_node)  # fit inside one node, held out on two
        assert r.fit or r.devices == 2 * per_node
    found = {(r.setup, r.devices): r for r in fourth}
    # results.md: "DDP, synthetic | PyTorch 2.0.0+cu117 | puhti | 8 | 2023-09-28 | 2465.86",
    # one GPU 329.27
    puhti = found["csc_puhti_230928_fp32", 8]
    assert puhti.efficiency == approx(2465.86 / 8 / 329.27) and not puhti.fit
    assert puhti.per_device_batch == 32 and puhti.one_device_examples_per_s == 329.27
    # "DDP, synthetic, fp16 | PyTorch 2.1.1+rocm5.6 | lumi | 16 | 2023-11-17 | 12066.58", one 902.57
    lumi = found["csc_lumi_231117_fp16", 16]
    assert lumi.efficiency == approx(12066.58 / 16 / 902.57) and lumi.algorithm == "ring"
    assert found["csc_lumi_231117_fp16", 8].fit and found["csc_mahti_260109_fp32", 4].fit
    earlier = [{r.setup for r in published.new_rows(w)} for w in ("second", "final", "third")]
    assert not {r.setup for r in fourth} & set().union(
        *earlier, {r.setup for r in published.rows()}
    )


def test_the_csc_cards_bound_the_fits():
    """Network links from the centres' pages: Puhti dual-rail HDR100 (2 x 100 Gbit/s), Mahti one
    HDR link (200 Gbit/s), LUMI four Slingshot-11 interfaces (4 x 200 Gbit/s)."""
    expect = {"csc_puhti_240229_fp32": 200e9 / 8, "csc_mahti_240508_fp32": 200e9 / 8}
    expect["csc_lumi_240229_fp32"] = 4 * 200e9 / 8
    for key, link in expect.items():
        values = published.grid(published.NEW_SETUPS[key])
        assert max(values["inter_bw"]) == approx(link), key
        assert set(values) == set(published.CLUSTER)
    puhti = published.NEW_SETUPS["csc_puhti_240229_fp16"]
    # non-blocking fat tree: all 80 GPU nodes at 25 GB/s at once
    assert published.card_value(puhti, "net_total") == approx(80 * 25e9)
    mahti = published.NEW_SETUPS["csc_mahti_240508_fp16"]  # no total given: 8 nodes x 25 GB/s
    assert published.card_value(mahti, "net_total") == approx(8 * 25e9)
    assert max(published.grid(mahti)["intra_bw"]) == approx(100e9)  # 4 NVLink 3 links a pair


def test_beyond_and_pool_split_held_out_rows_by_servers():
    """Made-up rows on cards of 8 GPUs a node: 8 GPUs stay inside the fit rows' one node, 16
    need a second; on the K80 cluster the fit rows already span two machines (8 and 16 GPUs)."""
    row = published.Row
    a = published.Comparison(
        [
            row("s", "dlperf_tf2", "resnet50", 2, 0.95, fit=True),
            row("s", "dlperf_tf2", "resnet50", 4, 0.93, fit=True),
            row("s", "dlperf_tf2", "resnet50", 8, 0.90),
            row("s", "dlperf_tf2", "resnet50", 16, 0.85),
        ],
        [0.95, 0.93, 0.91, 0.80],
        [(0.9, 1.0)] * 4,
        {"dlperf_tf2": None},
    )
    b = published.Comparison(
        [
            row("s", "lambda_a100_pcie", "vgg16", 2, 0.99, fit=True),
            row("s", "lambda_a100_pcie", "vgg16", 4, 0.98, fit=True),
            row("s", "lambda_a100_pcie", "vgg16", 8, 0.97),
        ],
        [0.99, 0.98, 0.96],
        [(0.9, 1.0)] * 3,
        {"lambda_a100_pcie": None},
    )
    k80 = [
        row("s", "k80_cluster", "resnet50", n, e, fit=n < 32)
        for n, e in ((8, 0.9), (16, 0.9), (32, 0.8))
    ]
    assert published.beyond(a) == [False, False, False, True]
    assert published.beyond(published.Comparison(k80, [0.9] * 3, [(0, 1)] * 3, {})) == [
        False,
        False,
        True,
    ]
    out = published.pool([a, b], "beyond")
    assert [out.rows[i].devices for i in out.held_out()] == [16]
    # model |0.80 - 0.85| = 5 points; hold keeps 4 GPUs' 0.93: 8 points; linear 15 points
    assert out.scores() == {
        "model": (approx(5.0), 1.0),
        "linear": (approx(15.0), 0.0),
        "hold": (approx(8.0), 1.0),
    }
    inside = published.pool([a, b], "inside")
    # model |0.91 - 0.90| = 1 and |0.96 - 0.97| = 1; hold |0.93 - 0.90| = 3 and |0.98 - 0.97| = 1
    assert inside.scores()["model"][0] == approx(1.0) and inside.scores()["hold"][0] == approx(2.0)
    assert len(published.pool([a, b]).held_out()) == 3
    with pytest.raises(ValueError, match="share a setup"):
        published.pool([a, a])
    with pytest.raises(ValueError, match="side"):
        published.pool([a], "outside")
    with pytest.raises(ValueError, match="at least one"):
        published.pool([])


# ------------------------------------------------------- ties broken toward the hardware card


def test_departure_counts_grid_steps_from_the_card():
    setup = published.NEW_SETUPS["dlperf_tf2"]
    link = 100e9 / 8  # the card's EDR link; the grid tries 1/8, 1/4, 1/2, 1 of it
    point = {"intra_bw": 25e9, "inter_bw": link / 4, "inter_lat": 5e-5, "net_total": 8 * link}
    point |= {"overlap": 0.5, "fixed": 3e-3}
    # 0 + (1/4 is 2 steps below 1) + (10x the card's 5 us: 1 step) + 0 + (0.5 is 2 steps below
    # 1) + (3 ms is 2 steps above 0)
    assert published.departure(setup, point) == 0 + 2 + 1 + 0 + 2 + 2
    card = {"intra_bw": 25e9, "inter_bw": link, "inter_lat": 5e-6, "net_total": 8 * link}
    assert published.departure(setup, card | {"overlap": 1.0, "fixed": 0.0}) == 0


def test_what_the_fit_rows_cannot_see_keeps_the_card():
    """Made-up rows (not DLPerf's): both fit rows inside one 8-GPU server, so no network
    parameter changes the fit; the grid's first point takes 1/8 of the card's link."""
    made = functools.partial(published.Row, "made up", "dlperf_tf2", "resnet50")
    made = functools.partial(made, per_device_batch=128, one_device_examples_per_s=300.0)
    rows = [made(2, 0.95, fit=True), made(4, 0.93, fit=True), made(32, 0.9)]
    first, _, _ = published.fit_setup("dlperf_tf2", rows, ties="first")
    card, _, _ = published.fit_setup("dlperf_tf2", rows, ties="card")
    link = 100e9 / 8
    assert first.best["inter_bw"] == approx(link / 8) and first.best["net_total"] == approx(link)
    assert card.best["inter_bw"] == approx(link) and card.best["net_total"] == approx(8 * link)
    assert card.best["inter_lat"] == approx(5e-6)
    assert card.rms == approx(first.rms)  # the same fit to the fit rows
    default, _, _ = published.fit_setup("dlperf_tf2", rows)  # the card rule is the default
    assert default.best["inter_bw"] == approx(link) and default.best["inter_lat"] == approx(5e-6)
    with pytest.raises(ValueError, match="ties"):
        published.fit_setup("dlperf_tf2", rows, ties="nearest")
