"""The Ray benchmark runs (its quick workload, in its own subprocess and cluster) and reports
well-formed figures: the seed stored once, nothing per child in the object store."""

from __future__ import annotations

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
    assert len(section.notes) == 3 and "scaling across nodes" in section.notes[2]
