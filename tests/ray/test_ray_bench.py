"""The Ray benchmark runs (its quick workload, in its own subprocesses and clusters: one node,
then two) and reports well-formed figures: the seed stored once, nothing per child in the
object store, the ratios judged against their target, the workers' CPU on each of two nodes,
the load average it ran under; and its profile's parts cover the host's code."""

from __future__ import annotations

import pstats

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_env import isolation_problem

from benchmarks import bench_ray
from benchmarks.harness import Settings


@pytest.mark.slow
def test_the_quick_ray_benchmark_reports_its_figures() -> None:
    """Every row has a positive figure; no seed is put in the timed rounds; /dev/shm and the
    per-child seed bytes stay at 0."""
    problem = isolation_problem()
    if problem is not None:
        pytest.fail(problem)
    section = bench_ray.run(Settings(quick=True))
    assert section.unavailable is None
    rows = {row.label: row.value for row in section.rows}

    def figure(ending: str) -> float:
        (value,) = (value for label, value in rows.items() if label.endswith(ending))
        return value

    seed = figure("the seed in the object store (once per fork point)")
    assert seed > 100_000
    assert figure("seed bytes put per child, on Ray (seeds put in the timed rounds: 0)") == 0
    # A copy of the seed per child would grow shared memory by the seed's size each.
    assert figure("/dev/shm grown per child during a Ray round (median)") < seed / 100
    for label, value in rows.items():
        if "bytes" not in label and "/dev/shm" not in label:
            assert value > 0, label
    (ratio,) = (row for row in section.rows if row.label.endswith("Ray (1 node) / in process, "
                                                                   "all done"))
    assert ratio.target is not None and ratio.target.bound == 2 and ratio.cpu_value
    shares = [label for label in rows if ", 2 nodes: worker CPU per child on node" in label]
    assert len(shares) == 2  # both nodes' workers ran children
    assert len(section.notes) == 4 and "load average" in section.notes[1]
    assert "scaling across nodes" in section.notes[3]


def test_the_profile_parts_cover_the_host_code() -> None:
    """Every part of profile_parts is named, and a profile of this process's own code falls
    into them, the parts adding up to its total self time."""
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    bench_ray._loads([1.0, 2.0, 3.0])
    profiler.disable()
    stats = pstats.Stats(profiler)
    parts = bench_ray.profile_parts(stats)
    total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
    assert abs(sum(parts.values()) - total) < 1e-9 and "other" in parts
