"""The machine-floor benchmark that bench_scale.py prints beside its stage exponents."""

import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_memory_floor  # noqa: E402
import bench_scale  # noqa: E402


def test_each_operation_does_the_same_work_per_element():
    small, large = bench_memory_floor.operations(100), bench_memory_floor.operations(400)
    assert set(small) == set(large)
    # the object reads read every text once: their lengths' sum grows with the texts
    assert small["python objects in order"]() == small["python objects, random order"]()
    assert large["python dict lookups"]() == sum(range(400))
    assert len(large["numpy gather (a[random])"]()) == 400


def test_floor_exponents_are_log_ratios_of_the_two_timings():
    found = bench_memory_floor.floor_exponents(2000, 8000)
    assert set(found) == set(bench_memory_floor.operations(10))
    for t1, t2, e in found.values():
        assert t1 > 0 and t2 > 0
        assert math.isclose(e, math.log(t2 / t1) / math.log(4))


def test_verdict_names_the_floor_range(capsys):
    bench_scale.print_floor_range({"pass": (1.0, 2.0, 0.98), "gather": (1.0, 3.0, 1.42)})
    assert "exponent 0.98 (pass) to 1.42 (gather)" in capsys.readouterr().out
    bench_scale.print_floor_range(None)
    assert capsys.readouterr().out == ""
