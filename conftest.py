"""pytest configuration shared by the unit tests and nbval over lessons/ (and solutions/)."""

from collections import Counter

pytest_plugins = ["tests.support.nbval_plugin"]

# `make test` runs whole files on two xdist workers (--dist loadfile), in collection order
# (--no-loadscope-reorder): a worker takes the next file when it has two tests left. These
# files take longest (seconds of one worker in a make test, a guide only), so they start
# first; otherwise a long file that starts last keeps one worker busy while the other waits.
# The other files follow, those with the most tests first (xdist's own order).
LONGEST_FIRST = [
    "tests/notebooks/test_wrong_answers.py",  # 180 s: eight solution kernels, 195 wrong answers
    "lessons/05_throughput_and_scaling.ipynb",  # 110-160 s: sweeps in child processes
    "tests/{unit,process}/test_cluster.py",  # 90 s
    "tests/notebooks/test_exercises.py",  # 85 s: seven exercise notebooks
    "lessons/08_beyond_one_machine.ipynb",  # 80 s
    "lessons/07_parameter_servers.ipynb",  # 80 s
    "tests/process/test_towers_reference.py",  # 80 s: four child processes
    "tests/process/test_multihost.py",  # 70 s
    "lessons/09_predicting_scale.ipynb",
    "tests/{unit,process}/test_widgets.py",  # 65 s
    "lessons/04_all_reduce_and_mirrored.ipynb",  # 65 s
    "tests/notebooks/test_grading.py",  # 60 s: nbgrader autogrades three notebooks
    "tests/{unit,process}/test_launcher.py",  # 60 s
    "tests/{unit,process}/test_bench.py",  # 50 s
    "lessons/01_one_device.ipynb",  # 50 s
    "lessons/06_tensorboard.ipynb",  # 50 s
    "tests/{unit,process}/test_summaries.py",  # 40 s
    "lessons/02_towers.ipynb",  # 40 s
    "tests/process/test_cluster_tf1.py",  # 30 s, in two tests
    "lessons/03_gradient_averaging.ipynb",  # 25 s
]


def pytest_collection_modifyitems(config, items):
    """With --no-loadscope-reorder, order the files: LONGEST_FIRST, then by number of tests.

    (xdist's workers collect with dist "no"; the flag is what they see of make test's mode.)
    """
    if getattr(config.option, "loadscopereorder", True):
        return
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    files = [item.nodeid.split("::")[0] for item in items]
    count = Counter(files)
    order = sorted(
        range(len(items)), key=lambda i: (rank.get(files[i], len(rank)), -count[files[i]], i)
    )
    items[:] = [items[i] for i in order]
