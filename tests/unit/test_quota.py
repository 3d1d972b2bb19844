"""plumbing.quota reads a container's CPU quota and memory limit, v1 and v2, from fake files."""

from pathlib import Path

import pytest

from dpkit.plumbing import quota


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
