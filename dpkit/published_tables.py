"""The published throughput tables that :mod:`dpkit.published` fits and predicts, as
published, with their settings (images/s at each device count; the first count is the base).

Two groups, kept apart because they were collected at different times:

* TensorFlow's benchmark page (May 2017): the tables the lesson's split was fixed on, and
  scored (see :mod:`dpkit.published`).
* DLPerf (OneFlow's benchmark suite, Oct 2020, https://github.com/Oneflow-Inc/DLPerf): nine
  frameworks training ResNet-50 v1.5 in float32 at 128 images per GPU on the same four
  servers of 8 Tesla V100-SXM2-16GB (NVLink in a hybrid cube mesh), one 100 Gbit/s EDR
  InfiniBand adapter (Mellanox ConnectX-4, ``mlx5_0``) per server, CUDA 10.2, NCCL 2.7.3;
  ImageNet from disk (not synthetic), so the input pipeline is part of every figure. Added
  for issue 32 as data the model had never met. Written down here before any fit was run on
  them, with their split: each series fits its two smallest counts above one GPU (as every
  table here) and holds out the rest; :data:`SECOND_SET` is scored first with the model as
  it stood; :data:`FINAL_SET` is set aside, scored only once a change to the model decided
  without its errors is ready, the model before and after side by side.
"""

# images/s, synthetic data (tensorflow/docs site/en/r1/guide/performance/benchmarks.md)
TF_DGX1 = {  # batch 64 per GPU (AlexNet 512)
    "inception_v3": {1: 142, 2: 284, 4: 569, 8: 1131},
    "resnet50": {1: 219, 2: 422, 4: 852, 8: 1734},
    "resnet152": {1: 91.8, 2: 181, 4: 356, 8: 716},
    "alexnet": {1: 2987, 2: 5658, 4: 10509, 8: 17822},
    "vgg16": {1: 154, 2: 295, 4: 584, 8: 1081},
}
TF_DGX1_B32 = {  # DGX-1 "Other Results": batch 32 per GPU
    "inception_v3": {1: 128, 2: 259, 4: 520, 8: 995},
    "resnet50": {1: 195, 2: 368, 4: 768, 8: 1485},
    "resnet152": {1: 82.7, 2: 160, 4: 317, 8: 632},
    "vgg16": {1: 144, 2: 281, 4: 549, 8: 820},
}
TF_GCE_K80 = {  # GCE n1-standard-32-k80x8; batch 64, 64, 32, 512, 32
    "inception_v3": {1: 30.5, 2: 57.8, 4: 116, 8: 227},
    "resnet50": {1: 51.9, 2: 99.0, 4: 195, 8: 387},
    "resnet152": {1: 20.0, 2: 38.2, 4: 75.8, 8: 148},
    "alexnet": {1: 656, 2: 1209, 4: 2328, 8: 4640},
    "vgg16": {1: 35.4, 2: 64.8, 4: 120, 8: 234},
}
TF_AWS_K80 = {  # one AWS p2.8xlarge; batch 64, 64, 32, 512, 32
    "inception_v3": {1: 30.8, 2: 58.7, 4: 117, 8: 230},
    "resnet50": {1: 51.5, 2: 98.0, 4: 195, 8: 384},
    "resnet152": {1: 19.7, 2: 37.6, 4: 74.9, 8: 149},
    "alexnet": {1: 684, 2: 1244, 4: 2479, 8: 4853},
    "vgg16": {1: 36.3, 2: 69.4, 4: 141, 8: 260},
}
TF_K80_CLUSTER = {  # up to 8 p2.8xlarge (8 GPUs each); batch 64, 64, 32
    "inception_v3": {1: 29.7, 8: 229, 16: 459, 32: 902, 64: 1783},
    "resnet50": {1: 52.4, 8: 378, 16: 751, 32: 1388, 64: 2744},
    "resnet152": {1: 19.4, 8: 146, 16: 291, 32: 565, 64: 981},
}
TF_K80_CLUSTER_B32 = {  # the cluster's "Other Results": batch 32 per GPU
    "inception_v3": {1: 29.2, 8: 219, 16: 427, 32: 820, 64: 1608},
    "resnet50": {1: 48.4, 8: 333, 16: 667, 32: 1180, 64: 2315},
}
#: parameter servers at 64 GPUs (8 machines) where the page names fewer than machines
SERVERS_AT_64 = {"inception_v3": 6, "resnet152": 4}

# ---------------------------------------------------------------------------- DLPerf, 2020
# images/s, ResNet-50 v1.5, float32, batch 128 per GPU, from each framework's README in
# Oneflow-Inc/DLPerf (commit c89430b): the "FP32, batch size = 128" table (rows 1 node 1 GPU
# to 4 nodes 32 GPUs); key -> (framework and exchange, README path, {GPUs: images/s})
DLPERF = {
    "dlperf_tf2": (
        "TensorFlow 2.3, MultiWorkerMirroredStrategy, NCCL all-reduce (official/vision)",
        "TensorFlow/resnet50v1.5/README.md",
        {1: 321.8, 2: 574.66, 4: 1143.46, 8: 2458.74, 16: 4849.68, 32: 9418.44},
    ),
    "dlperf_mxnet": (
        "MXNet 1.6 (gluon-cv), Horovod 0.19.5 with NCCL",
        "MxNet/Classification/RN50v1b/README.md",
        {1: 384.19, 2: 749.04, 4: 1494.58, 8: 2556.03, 16: 4855.34, 32: 9579.74},
    ),
    "dlperf_paddle": (
        "PaddlePaddle 1.8.3 (PaddleCV), NCCL collective",
        "PaddlePaddle/resnet50v1.5/README.md",
        {1: 352.72, 2: 644.66, 4: 1358.64, 8: 2625.38, 16: 4895.27, 32: 9348.17},
    ),
    "dlperf_mindspore": (
        "MindSpore (GPU), MPI launch, NCCL all-reduce",
        "MindSpore/resnet50v1.5/README.md",
        {1: 369.81, 2: 710.68, 4: 1418.66, 8: 2773.82, 16: 5483.22, 32: 10731.78},
    ),
    "dlperf_oneflow": (
        "OneFlow 0.2.0, NCCL all-reduce (reports/resnet50_oneflow_v0.2_report_1009.md)",
        "OneFlow/Classification/ConvNets/resnet50v1.5/reports/resnet50_oneflow_v0.2_report_1009.md",
        {1: 397.64, 8: 3130.34, 16: 6260.30, 32: 12411.97},
    ),
    "dlperf_ngc_mxnet": (
        "NGC MXNet 20.03 (DeepLearningExamples), DALI, Horovod with NCCL",
        "NVIDIADeepLearningExamples/MxNet/Classification/RN50v1.5/README.md",
        {1: 392.24, 2: 764.6, 4: 1518.04, 8: 3006.98, 16: 5758.49, 32: 11331.93},
    ),
    "dlperf_ngc_tf1": (
        "NGC TensorFlow 1.15 (DeepLearningExamples), DALI, Horovod with NCCL, no XLA",
        "NVIDIADeepLearningExamples/TensorFlow/Classification/ConvNets/resnet50v1.5/README.md",
        {1: 362.44, 4: 1391.28, 8: 2721.98, 16: 5099.42, 32: 9514.64},
    ),
    "dlperf_ngc_pytorch": (
        "NGC PyTorch 20.03 (DeepLearningExamples), DALI, APEX DistributedDataParallel, NCCL",
        "NVIDIADeepLearningExamples/PyTorch/resnet50v1.5/README.md",
        {1: 367.29, 4: 1449.48, 8: 2887.65, 16: 5716.79, 32: 10917.09},
    ),
    "dlperf_pytorch": (
        "PyTorch 1.6 (pytorch/examples), DataLoader with 48 workers, DDP with NCCL",
        "PyTorch/resnet50v1.5/README.md",
        {1: 348.62, 4: 1226.38, 8: 2632.93, 16: 5115.4, 32: 10021.29},
    ),
}
DLPERF_BATCH = 128
#: the split between the two DLPerf groups, fixed before any fit was run on either:
#: scored first, with the model as it stood (13 held-out rows) ...
SECOND_SET = ("dlperf_tf2", "dlperf_mxnet", "dlperf_paddle", "dlperf_mindspore", "dlperf_oneflow")
#: ... and set aside as the final test (9 held-out rows): NVIDIA's containers and PyTorch
FINAL_SET = ("dlperf_ngc_mxnet", "dlperf_ngc_tf1", "dlperf_ngc_pytorch", "dlperf_pytorch")
