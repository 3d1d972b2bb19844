"""plumbing.quota reads a container's CPU quota and memory limit, v1 and v2, from fake files."""

from pathlib import Path

import pytest

from dpkit.plumbing import contract, quota


def fake(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return tmp_path


MEMINFO = {"proc/meminfo": "MemTotal:       25165824 kB\nMemFree:  1 kB"}  # 24 GiB


def test_cgroup_v2_quota_and_limit_in_the_process_own_group(tmp_path):
    root = fake(
        tmp_path,
        {
            "proc/self/cgroup": "0::/user.slice/pod1",
            "sys/fs/cgroup/user.slice/pod1/cpu.max": "150000 100000",
            "sys/fs/cgroup/user.slice/pod1/memory.max": str(2 * 2**30),
            "sys/fs/cgroup/cpu.max": "max 100000",
            **MEMINFO,
        },
    )
    assert quota.cpu_quota(root) == 1.5
    assert quota.memory_limit(root) == 2 * 2**30
    q = quota.Quota(8, quota.cpu_quota(root), quota.memory_limit(root), quota.physical_memory(root))
    assert q.cores == 1 and q.memory == 2 * 2**30
    assert (
        q.describe()
        == "1 core(s) (a CPU quota of 1.5 of the 8 visible), 2.0 GiB of memory (a container limit)"
    )


def test_cgroup_v2_without_limits(tmp_path):
    root = fake(
        tmp_path,
        {
            "proc/self/cgroup": "0::/",
            "sys/fs/cgroup/cpu.max": "max 100000",
            "sys/fs/cgroup/memory.max": "max",
            **MEMINFO,
        },
    )
    q = quota.Quota(2, quota.cpu_quota(root), quota.memory_limit(root), quota.physical_memory(root))
    assert (q.cpu_quota, q.memory_limit, q.cores, q.memory) == (None, None, 2, 24 * 2**30)
    assert q.describe() == "2 core(s), 24.0 GiB of memory"


def test_cgroup_v1_like_this_machine(tmp_path):
    """/proc/self/cgroup lists one line per controller; -1 and a huge limit mean none."""
    root = fake(
        tmp_path,
        {
            "proc/self/cgroup": "4:memory:/api/abc\n2:cpu,cpuacct:/\n0::/",
            "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1",
            "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000",
            "sys/fs/cgroup/memory/api/abc/memory.limit_in_bytes": "9223372036854771712",
        },
    )
    assert quota.cpu_quota(root) is None and quota.memory_limit(root) is None


def test_cgroup_v1_limits(tmp_path):
    root = fake(
        tmp_path,
        {
            "proc/self/cgroup": "4:memory:/\n2:cpu,cpuacct:/",
            "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "250000",
            "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000",
            "sys/fs/cgroup/memory/memory.limit_in_bytes": str(3 * 2**30),
        },
    )
    assert quota.cpu_quota(root) == 2.5 and quota.memory_limit(root) == 3 * 2**30
    assert quota.Quota(4, 2.5, None, None).cores == 2


@pytest.mark.parametrize(
    "cpu, cores", [(None, 4), (0.5, 1), (1.0, 1), (3.9999999999, 4), (16.0, 4)]
)
def test_cores_are_whole_cores_the_quota_allows_within_the_affinity(cpu, cores):
    assert quota.Quota(4, cpu, None, None).cores == cores


def test_nothing_readable_means_no_limit(tmp_path):
    assert quota.cpu_quota(tmp_path) is None and quota.memory_limit(tmp_path) is None
    assert quota.physical_memory(tmp_path) is None
    assert quota.Quota(2, None, None, None).describe() == "2 core(s), memory unknown"


def test_this_machine_reads_without_error():
    q = quota.read()
    assert q.cores >= 1 and (q.memory is None or q.memory > 2**28)


GIB = 2**30


@pytest.mark.parametrize(
    "text, size",
    [
        ("2G", 2 * GIB),
        ("2gb", 2 * GIB),
        ("1500M", 1500 * 2**20),
        ("1.5G", 3 * GIB // 2),
        ("512k", 512 * 1024),
        ("2147483648", 2 * GIB),
        (" 3G ", 3 * GIB),
    ],
)
def test_the_stated_memory_limit_reads_binary_units(text, size):
    assert quota.memory_stated({contract.MEMORY_LIMIT: text}) == size


@pytest.mark.parametrize("text", ["two", "0", "-1G", "2X", "G", "nan", "inf"])
def test_a_stated_memory_limit_that_is_no_size_names_the_variable(text):
    name = contract.MEMORY_LIMIT
    with pytest.raises(ValueError, match=f"{name}=.*e.g. {name}=2G"):
        quota.memory_stated({name: text})


def test_unset_or_empty_states_nothing():
    assert quota.memory_stated({}) is None
    assert quota.memory_stated({contract.MEMORY_LIMIT: ""}) is None


def test_the_stated_limit_only_lowers_the_cgroup_limit(tmp_path):
    root = fake(
        tmp_path,
        {"proc/self/cgroup": "0::/", "sys/fs/cgroup/memory.max": str(2 * GIB), **MEMINFO},
    )
    lower = quota.read(root, {contract.MEMORY_LIMIT: "1G"})
    assert (
        lower.memory == GIB and lower.describe_memory() == "1.0 GiB of memory (DPKIT_MEMORY_LIMIT)"
    )
    higher = quota.read(root, {contract.MEMORY_LIMIT: "8G"})
    assert higher.memory == 2 * GIB
    assert higher.describe_memory() == "2.0 GiB of memory (a container limit)"
    assert quota.read(root, {}).memory == 2 * GIB


def test_need_adds_the_shared_pages_once_and_each_child_whole():
    one, three = quota.need(1), quota.need(3)
    assert three - one == 2 * quota.TF_CHILD_BYTES  # each further child adds its own pages
    assert one == quota.TF_SHARED_BYTES + quota.KERNEL_BYTES + quota.TF_CHILD_BYTES


@pytest.mark.parametrize("children", [1, 2, 4])
def test_fits_is_need_within_the_memory(children):
    by_hand = quota.TF_SHARED_BYTES + quota.KERNEL_BYTES + children * quota.TF_CHILD_BYTES
    assert quota.fits(children, by_hand) and not quota.fits(children, by_hand - 1)
    assert quota.fits(children, None)  # unknown memory: run as asked


def test_a_binder_pod_holds_the_kernel_and_two_children_but_not_four():
    """What lesson 05 relies on: 2 GiB (mybinder.org's limit) fits two pinned workers."""
    assert quota.fits(2, 2 * GIB) and not quota.fits(4, 2 * GIB)
