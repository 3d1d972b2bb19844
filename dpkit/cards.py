"""Model cards and hardware cards for the cost model of :mod:`dpkit.scaling` (lesson 05 reads a
model card; lesson 09 predicts with them).

A *model card* holds a model's trainable parameters and forward FLOPs per example, counted
from the Keras model itself (:func:`dpkit.models.count_params`,
:func:`dpkit.models.flops_per_example`): the published ImageNet models come from
``keras.applications`` with ``weights=None`` (nothing is downloaded), AlexNet is built here
layer by layer (Keras has no AlexNet), and the workbook's own models from :mod:`dpkit.models`.

A *hardware card* holds a device's achievable FLOP/s and the links between devices, with
the source of every number. :func:`this_machine` makes one from a measurement
(:func:`dpkit.calibrate.measure`).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from dpkit import models
from dpkit.plumbing import checks
from dpkit.scaling import Hardware, Link, ModelCard, gbit

#: name -> (Keras application class name or None, input size, what it is)
PUBLISHED_MODELS = {
    "alexnet": (None, 227, "AlexNet as TensorFlow's benchmarks built it (one tower, 227x227)"),
    "vgg16": ("VGG16", 224, "VGG-16, keras.applications.VGG16"),
    "inception_v3": ("InceptionV3", 299, "Inception V3, keras.applications.InceptionV3"),
    "resnet50": ("ResNet50", 224, "ResNet-50, keras.applications.ResNet50"),
    "resnet101": ("ResNet101", 224, "ResNet-101, keras.applications.ResNet101"),
    "resnet152": ("ResNet152", 224, "ResNet-152, keras.applications.ResNet152"),
}
MODEL_NAMES = tuple(PUBLISHED_MODELS) + tuple(models.MODELS)
DISPLAY = {"alexnet": "AlexNet", "vgg16": "VGG-16", "inception_v3": "Inception V3"}
DISPLAY |= {"resnet50": "ResNet-50", "resnet101": "ResNet-101", "resnet152": "ResNet-152"}
DISPLAY |= {"lenet5": "LeNet-5", "cifar10_cnn": "CIFAR-10 CNN", "mnist_mlp": "MNIST MLP"}


def alexnet(input_size: int = 227, num_classes: int = 1000):
    """AlexNet as TensorFlow's ``tf_cnn_benchmarks`` built it: five convolutions (64, 192,
    384, 384, 256 filters), three max-pools and two 4096-wide dense layers, one tower."""
    import keras  # here: lesson 09 imports cards without TF
    from keras import layers

    stack = [
        keras.Input((input_size, input_size, 3)),
        layers.Conv2D(64, 11, strides=4, activation="relu"),
        layers.MaxPooling2D(3, 2),
        layers.Conv2D(192, 5, padding="same", activation="relu"),
        layers.MaxPooling2D(3, 2),
        layers.Conv2D(384, 3, padding="same", activation="relu"),
        layers.Conv2D(384, 3, padding="same", activation="relu"),
        layers.Conv2D(256, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(3, 2),
        layers.Flatten(),
        layers.Dense(4096, activation="relu"),
        layers.Dense(4096, activation="relu"),
        layers.Dense(num_classes),
    ]
    return keras.Sequential(stack, name="alexnet")


def build(name: str):
    """The Keras model behind a card (random weights, nothing downloaded)."""
    checks.one_of(name, MODEL_NAMES, "model")
    if name in models.MODELS:
        return models.build(name)
    application, size, _ = PUBLISHED_MODELS[name]
    if application is None:
        return alexnet(size)
    import keras  # here: lesson 09 imports cards without TF

    return getattr(keras.applications, application)(weights=None, input_shape=(size, size, 3))


#: the published models' cards, counted by ``tools/model_cards.py`` (building the six Keras
#: models takes about 20 s; the file saves the lesson that wait, and a test recounts them)
CARDS_FILE = Path(__file__).with_name("model_cards.json")


def count(name: str) -> ModelCard:
    """Build the Keras model and count its trainable parameters and forward FLOPs."""
    model = build(name)
    if name in models.MODELS:
        source = f"dpkit.models.{name}, counted by dpkit.models"
    else:
        source = PUBLISHED_MODELS[name][2] + ", counted by dpkit.models"
    params, flops = models.count_params(model), float(models.flops_per_example(model))
    card = ModelCard(DISPLAY.get(name, name), params, flops, source=source)
    del model
    import keras  # here: lesson 09 imports cards without TF

    keras.backend.clear_session()  # free the big models' variables
    return card


@functools.cache
def model_card(name: str) -> ModelCard:
    """The card of a model: the published ones from :data:`CARDS_FILE` (counted by
    :func:`count`), the workbook's own counted now."""
    checks.one_of(name, MODEL_NAMES, "model")
    if name in models.MODELS:
        return count(name)
    stored = json.loads(CARDS_FILE.read_text())
    return ModelCard(**stored[name])


# ----------------------------------------------------------------------------- hardware

#: NVIDIA Tesla P100 (SXM2) fp32 peak, from NVIDIA's P100 data sheet
P100_PEAK_FLOPS = 10.6e12
#: NVIDIA Tesla V100 (SXM2) fp32 peak, from NVIDIA's V100 data sheet
V100_PEAK_FLOPS = 15.7e12
#: one GK210 (half a Tesla K80 board, what a cloud "K80 GPU" is) fp32 peak at boost clock
K80_PEAK_FLOPS = 4.37e12

#: fp32 peaks of the PCIe GPUs in Lambda's servers (issue 32's third set), from NVIDIA's data
#: sheets: A100 40GB PCIe, RTX A6000, GeForce RTX 3090, GeForce RTX 2080 Ti, Quadro RTX 8000
PCIE_GPU_PEAK_FLOPS = {"a100": 19.5e12, "a6000": 38.7e12, "3090": 35.6e12, "2080ti": 13.4e12}
PCIE_GPU_PEAK_FLOPS["rtx8000"] = 16.3e12
#: one direction of a PCIe x16 slot: 3.0 (8 GT/s a lane) and 4.0 (16 GT/s), 128b/130b coding
PCIE3_X16, PCIE4_X16 = 15.75e9, 31.5e9

#: a K80 board's two GPUs share one PCIe 3.0 x16 link to the host (15.75 GB/s a direction)
K80_HOST = Link(10e-6, 15.75e9 / 2)

HARDWARE = {
    "dgx1": Hardware(
        "DGX-1 (8x P100, NVLink)",
        device_flops_per_s=0.5 * P100_PEAK_FLOPS,
        devices_per_node=8,
        intra=Link(5e-6, 20e9),  # NVLink 1: 20 GB/s per link and direction
        host=Link(5e-6, 8e9),  # PCIe 3.0 x16, shared by two GPUs per switch
        source="NVIDIA DGX-1 and Tesla P100 data sheets (2016-17); achievable rate: half the peak",
    ),
    "p100_roce25": Hardware(
        "P100 servers (4 GPUs) over 25 Gbit/s RoCE",
        device_flops_per_s=0.5 * P100_PEAK_FLOPS,
        devices_per_node=4,
        intra=Link(5e-6, 12e9),  # PCIe 3.0 x16, as measured by NCCL tests
        inter=Link(5e-6, gbit(25)),
        source="Horovod's benchmarks (docs/benchmarks.rst): 128 servers of 4 Pascal GPUs, "
        "25 Gbit/s RoCE",
    ),
    "k80_10gbe": Hardware(
        "K80 servers (8 GPUs) over 10 Gbit/s Ethernet",
        device_flops_per_s=0.4 * K80_PEAK_FLOPS,
        devices_per_node=8,
        intra=Link(10e-6, 6e9),  # PCIe 3.0 through a switch per K80 board
        inter=Link(50e-6, gbit(10)),  # TCP over 10 GbE (AWS p2.8xlarge)
        host=K80_HOST,
        source="TensorFlow performance benchmarks (2017), AWS p2.8xlarge: 8 K80 GPUs, 10 GbE",
    ),
    "k80_gce": Hardware(
        "GCE server (8 K80 GPUs)",
        device_flops_per_s=0.4 * K80_PEAK_FLOPS,
        devices_per_node=8,
        intra=Link(10e-6, 6e9),
        host=K80_HOST,
        source="TensorFlow performance benchmarks (2017), GCE n1-standard-32-k80x8: 8 K80 GPUs",
    ),
    "k80_25gbe": Hardware(
        "K80 servers (16 GPUs) over 25 Gbit/s Ethernet",
        device_flops_per_s=0.4 * K80_PEAK_FLOPS,
        devices_per_node=16,
        intra=Link(10e-6, 6e9),
        inter=Link(50e-6, gbit(25)),
        source="AWS p2.16xlarge: 16 K80 GPUs, 25 Gbit/s Ethernet",
    ),
    "v100_ib100": Hardware(
        "V100 servers (8x V100 SXM2, NVLink 2) over 100 Gbit/s EDR InfiniBand",
        device_flops_per_s=0.5 * V100_PEAK_FLOPS,
        devices_per_node=8,
        intra=Link(5e-6, 25e9),  # NVLink 2: 25 GB/s per link and direction (300 GB/s: 6 links x 2)
        inter=Link(5e-6, gbit(100)),  # one ConnectX-4 EDR adapter per server: 4 lanes, 100 Gbit/s
        host=Link(5e-6, 8e9),  # PCIe 3.0 x16, shared by two GPUs per switch (as the DGX-1)
        source="NVIDIA Tesla V100 data sheet (15.7 TFLOP/s fp32 SXM2, NVLink 300 GB/s), ConnectX-4 "
        "user manual (EDR InfiniBand, 100 Gbit/s); DLPerf's servers (Oneflow-Inc/DLPerf, reports/"
        "dlperf_benchmark_test_report_v1.md); achievable rate: half the peak",
    ),
    "bigbasin_50gbe": Hardware(
        "Big Basin (8x P100, NVLink) over 50 Gbit/s Ethernet",
        device_flops_per_s=0.5 * P100_PEAK_FLOPS,
        devices_per_node=8,
        intra=Link(5e-6, 20e9),
        inter=Link(5e-6, gbit(50)),
        source="Goyal et al. (2017), section 5: 32 Big Basin servers, 50 Gbit/s Ethernet",
    ),
}
HARDWARE |= {
    f"{gpu}_pcie": Hardware(
        f"one server of 8 {label} on PCIe {generation}",
        device_flops_per_s=0.5 * PCIE_GPU_PEAK_FLOPS[gpu],
        devices_per_node=8,
        intra=Link(5e-6, PCIE4_X16 if generation == "4.0" else PCIE3_X16),
        source=f"NVIDIA's {label} data sheet; PCIe {generation} inferred from the platform of "
        "Lambda's tf_cnn_benchmarks server (lambdal/lambda-tensorflow-benchmark); achievable "
        "rate: half the peak",
    )
    for gpu, label, generation in (
        ("a100", "A100 40GB PCIe", "4.0"),
        ("a6000", "RTX A6000", "4.0"),
        ("3090", "GeForce RTX 3090", "4.0"),
        ("2080ti", "GeForce RTX 2080 Ti", "3.0"),
        ("rtx8000", "Quadro RTX 8000", "3.0"),
    )
}


#: fp32 peaks of the GPUs of CSC's clusters (issue 48's fourth set): NVIDIA's A100 data sheet
#: (SXM4, 19.5 TFLOP/s), AMD's MI250X (47.9 TFLOP/s fp32 vector for the module of two dies, one
#: die is one GPU to PyTorch); the fourth set's rows give the one-GPU rate, so neither is used
A100_PEAK_FLOPS, MI250X_DIE_PEAK_FLOPS = 19.5e12, 47.9e12 / 2

#: CSC's GPU clusters as mvsjober/ml-benchmarks ran them (two nodes at most). Network figures
#: from CSC's documentation (docs.csc.fi; CSCfi/csc-user-guide, docs/computing/systems-puhti.md
#: and systems-mahti.md) and LUMI's (docs.lumi-supercomputer.eu/hardware/lumig and /network);
#: the links inside a node are assumptions where the sources name only their kind. A network
#: total only where a source gives one (Puhti's non-blocking fat tree); elsewhere 8 nodes
#: at their full link (:func:`dpkit.published_grid.card_value`), which two nodes never reach
HARDWARE |= {
    "puhti_v100": Hardware(
        "Puhti GPU nodes (4x V100 SXM2, NVLink) over dual-rail HDR100 InfiniBand",
        device_flops_per_s=0.5 * V100_PEAK_FLOPS,
        devices_per_node=4,
        # CSC: "4 GPUs connected with NVLink"; assumed: the 4-GPU NVLink 2 mesh, two of each
        # V100's six links (25 GB/s a direction each) to each other GPU
        intra=Link(5e-6, 50e9),
        inter=Link(5e-6, gbit(200)),  # CSC: dual-rail HDR100, 200 Gbps aggregate per node
        # CSC: "a non-blocking fat-tree topology": all 80 GPU nodes at their full link at once
        network_total_bytes_per_s=80 * gbit(200),
        source="CSC, Technical details about Puhti (80 GPU nodes, 4 V100 32 GB with NVLink, "
        "dual-rail HDR100, 200 Gbps aggregate, non-blocking fat tree); NVIDIA Tesla V100 data "
        "sheet; achievable rate: half the peak",
    ),
    "mahti_a100": Hardware(
        "Mahti GPU nodes (4x A100 SXM4, NVLink) over 200 Gbit/s HDR InfiniBand",
        device_flops_per_s=0.5 * A100_PEAK_FLOPS,
        devices_per_node=4,
        # CSC: "four Nvidia Ampere A100 GPUs"; assumed: SXM4 on a 4-GPU NVLink 3 board, four of
        # each A100's twelve links (25 GB/s a direction each) to each other GPU
        intra=Link(5e-6, 100e9),
        # CSC: "each node is connected to the network with a single 200 Gbps HDR link" (said of
        # every Mahti node, not of the GPU nodes apart); no total for the GPU nodes is given
        inter=Link(5e-6, gbit(200)),
        source="CSC, Technical details about Mahti (24 GPU nodes, 4 A100 each; one 200 Gbps HDR "
        "link per node, dragonfly+); NVIDIA A100 data sheet (NVLink 600 GB/s); achievable rate: "
        "half the peak",
    ),
    "lumi_mi250x": Hardware(
        "LUMI-G nodes (4x MI250X, 8 dies) over 4x 200 Gbit/s Slingshot-11",
        device_flops_per_s=0.5 * MI250X_DIE_PEAK_FLOPS,
        devices_per_node=8,
        # LUMI: dies on different MI250X joined by one or two Infinity Fabric links of 100 GB/s
        # both ways; a ring over the 8 dies crosses at least one single link, 50 GB/s a direction
        intra=Link(5e-6, 50e9),
        inter=Link(5e-6, gbit(800)),  # LUMI: four 200 Gb/s interfaces per node, one per MI250X
        # no network total: the network page of LUMI's user guide (Lumi-supercomputer/
        # lumi-userguide, docs/hardware/network.md) describes the dragonfly without one; a
        # table of 276 TB/s within LUMI-G was seen only on a preview build of that page, so it
        # is not confirmed and not used
        source="LUMI documentation, GPU nodes - LUMI-G (4 MI250X, Infinity Fabric between dies, "
        "four 200 Gb/s Slingshot-11 interfaces per node) and Network and interconnect (50 GB/s "
        "both ways per endpoint, dragonfly); achievable rate: half the peak",
    ),
}


def this_machine(calibration, *, model: ModelCard | None = None, examples_per_s=None):
    """A hardware card of this machine from :func:`dpkit.calibrate.measure`: one device is
    one pinned core with one thread; the link is the fitted loopback all-reduce.

    The device rate is the measured one-core matmul rate, or, given ``model`` and its
    measured one-worker ``examples_per_s``, what that training achieved.
    """
    rate = calibration.matmul_flops_per_s
    if model is not None and examples_per_s is not None:
        rate = examples_per_s * model.train_flops
    return Hardware(
        f"this machine ({len(calibration.cores)} pinned cores)",
        device_flops_per_s=rate,
        devices_per_node=max(len(calibration.cores), 1),
        intra=Link(calibration.alpha_s, calibration.bandwidth_bytes_per_s),
        source="measured here by dpkit.calibrate (loopback MultiWorkerMirrored all-reduce)",
    )
