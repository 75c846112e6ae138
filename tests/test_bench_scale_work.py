"""The work bench_scale.py counts in pairing: rows read and candidates screened, a growth free of
the machine's caches and drift."""

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_scale  # noqa: E402


class _Builder:
    """The four methods the bench wraps, with what the pairing's return."""

    def topic_view(self, ep, cands):
        return np.ones(len(cands), dtype=bool), np.zeros(len(cands), dtype=np.int64)

    def topic_view_whole(self, ep, universe):  # its own product, as the pairing's (not topic_view)
        return np.ones(len(universe), dtype=bool), np.zeros(len(universe), dtype=np.int64)

    def category_bin_view(self, ep, universe, jaccard_bin, rows):
        at = universe[: len(universe) // 2]
        return at, np.ones(len(at), dtype=bool), np.zeros(len(at), dtype=np.int64)

    def screen(self, plan, counts):
        return plan % 2 == 0


def test_wrapped_reads_return_what_they_did_and_count_their_rows():
    builder, work = _Builder(), dict.fromkeys(bench_scale.WORK, 0)
    bench_scale.counted_work(builder, work)
    bench_scale.timed_screens(builder, work)
    kept, strata = builder.topic_view(3, np.arange(5))
    assert kept.all() and len(strata) == 5
    builder.topic_view_whole(3, np.arange(7))
    at, _, _ = builder.category_bin_view(3, np.arange(10), 1, rows=None)  # keywords pass through
    assert list(at) == [0, 1, 2, 3, 4]
    assert [builder.screen(p, {}) for p in range(3)] == [True, False, True]
    assert work == {
        "screened candidates": 3,
        "topic rows drawn": 5,
        "topic rows, whole views": 7,
        "category bin rows": 5,
    }


def test_work_table_exponents_tell_linear_from_quadratic(capsys):
    def size(n, *, quadratic):
        work = {"screened candidates": 2 * n, "topic rows drawn": n * n if quadratic else 3 * n}
        return {"n": n, "work": {**dict.fromkeys(bench_scale.WORK, 0), **work}}

    found = bench_scale.work_table([size(100, quadratic=True), size(1000, quadratic=True)])
    assert found == {"screened candidates": 1.0, "topic rows drawn": 2.0}  # none read: no exponent
    assert "work in pairing" in capsys.readouterr().out
    found = bench_scale.work_table([size(100, quadratic=False), size(1000, quadratic=False)])
    assert found == {"screened candidates": 1.0, "topic rows drawn": 1.0}
    assert bench_scale.work_table([size(100, quadratic=False)]) == {}
