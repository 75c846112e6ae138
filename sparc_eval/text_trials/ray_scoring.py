"""Trial scoring in fixed batches, here or over Ray actors (``runner: local | ray``).

:class:`ScoringRunner` scores the trials of one task and setting with a scorer that
:func:`~sparc_eval.text_trials.scoring.score_trials` has already fitted (fitting is unsupervised and
cheap, so it always runs here). The trials are cut into batches of ``batch_size`` trials, in
order; a batch is a :class:`~.trial_set.TrialSet` that holds only its own sides and texts. The
batches depend on ``batch_size`` alone, never on the number of workers, so the Ray runner gives
the local runner's scores with the same batches (the scorers in ``attackers.text`` score each
trial on its own, so any batching gives the same scores to float tolerance).

``runner="local"`` scores the batches one after the other in this process (``batch_size=None``:
all trials in one call, as before). ``runner="ray"`` ships the fitted scorer once to
``num_workers`` actors (``num_cpus`` each) on the Ray instance that ``ray.init`` joined: a local
one by default, ``address`` for a cluster. An actor takes ``scorer.for_worker(i, n)`` when the
scorer has that method (the LLM judge: actor i uses endpoint i mod the number of endpoints); each
actor scores one batch at a time and the scores come back in trial order. What the scorer counts
(``report()``) in the actors is added to this process's scorer through ``scorer.merge_report``
when it has one.

Resuming and retries rely on the scorer's own on-disk caches (the LLM reply cache, the embedding
cache), which several actors may append to at once: an interrupted run redoes only what was not
cached. An actor that dies (``RayActorError``: killed, out of memory, a crashed worker) is
replaced and only its unfinished batch is sent again, at most ``max_retries`` times per batch;
finished batches are never sent again. An exception raised by the scorer itself stops the run as
it would locally.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np

from ..errors import DataError
from ..hparams import bounded, library_only
from .trial_set import TrialSet

__all__ = [
    "DEFAULT_RAY_BATCH",
    "RUNNERS",
    "ScoringRunner",
    "report_delta",
    "trial_batch",
    "trial_batches",
]

RUNNERS = ("local", "ray")
DEFAULT_RAY_BATCH = 500  # trials per batch under Ray when batch_size is None


def trial_batch(ts: TrialSet, idx) -> TrialSet:
    """Trials ``idx`` of ``ts`` holding only the sides and texts they use (:meth:`~sparc_eval.text_trials.trial_set.TrialSet.take`)."""
    return ts.take(idx)


def trial_batches(ts: TrialSet, batch_size: Optional[int]) -> list:
    """Consecutive batches of ``batch_size`` trials (None: one batch of all of them)."""
    n = len(ts)
    size = n if batch_size is None else max(1, int(batch_size))
    return [trial_batch(ts, np.arange(lo, min(lo + size, n))) for lo in range(0, n, max(size, 1))]


def report_delta(before: dict, after: dict) -> dict:
    """What a ``report()`` gained: differences of its numbers, new entries of its lists."""
    out = {}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)) and isinstance(old, (int, float, type(None))):
            out[key] = value - (old or 0)
        elif isinstance(value, list) and value != old:
            old = old if isinstance(old, list) else []
            out[key] = value[len(old) :] if value[: len(old)] == old else list(value)
    return out


class _ScoringActor:
    """One Ray actor: a copy of the fitted scorer (``for_worker(index, n)`` when it has it)."""

    def __init__(self, scorer, index: int, n_workers: int):
        pick = getattr(scorer, "for_worker", None)
        self.scorer = pick(index, n_workers) if callable(pick) else scorer

    def score(self, batch):
        before = dict(self.scorer.report())
        scores = np.asarray(self.scorer.score(batch), dtype=float)
        return scores, report_delta(before, dict(self.scorer.report()))


@dataclass(frozen=True)
class ScoringRunner:
    """How a fitted scorer scores a trial set: ``runner`` local or ray (see the module docstring)."""

    runner: str = bounded("local", choices=RUNNERS)
    # a Ray cluster (ray.init(address=...)); None: a local instance
    address: Optional[str] = bounded(None, key="ray_address")
    num_workers: Optional[int] = bounded(
        2, minimum=1
    )  # Ray actors; None: the cluster's CPUs / num_cpus
    # trials per batch; None: all at once locally, DEFAULT_RAY_BATCH with Ray
    batch_size: Optional[int] = bounded(None, key="score_batch_size", minimum=1)
    max_retries: int = library_only(3)  # times a batch is sent again after its actor died
    num_cpus: float = library_only(1.0)  # CPUs each actor reserves

    def __post_init__(self):
        if self.runner not in RUNNERS:
            raise DataError(f"scoring runner {self.runner!r}: one of {', '.join(RUNNERS)}")
        for key in ("num_workers", "batch_size"):
            value = getattr(self, key)
            if value is not None and int(value) < 1:
                raise DataError(f"scoring runner: {key} must be >= 1, not {value}")

    def settings(self) -> dict:
        return asdict(self)

    def score(self, scorer, ts: TrialSet) -> np.ndarray:
        """One score per trial of ``ts`` from the fitted ``scorer``, in trial order."""
        if not len(ts):
            return np.zeros(0)
        if self.runner == "local":
            if self.batch_size is None:
                return np.asarray(scorer.score(ts), dtype=float)
            return np.concatenate(
                [
                    np.asarray(scorer.score(b), dtype=float)
                    for b in trial_batches(ts, self.batch_size)
                ]
            )
        batches = trial_batches(ts, self.batch_size or DEFAULT_RAY_BATCH)
        results = _RayPool(self, scorer, len(batches)).run(batches)
        return np.concatenate([results[i] for i in range(len(batches))])


def _ray():
    from ..speech.backends import require

    return require("ray", extra="ray", purpose="the Ray scoring runner")


class _RayPool:
    """Actors that score batches; a dead actor is replaced and its batch sent again."""

    def __init__(self, options: ScoringRunner, scorer, n_batches: int):
        ray = self.ray = _ray()
        if not ray.is_initialized():
            ray.init(address=options.address, include_dashboard=False, ignore_reinit_error=True)
        n = options.num_workers
        if n is None:
            n = int(ray.cluster_resources().get("CPU", 1) // max(options.num_cpus, 1e-6))
        self.n = max(1, min(int(n), n_batches))
        self.options, self.scorer = options, scorer
        self.cls = ray.remote(num_cpus=options.num_cpus, max_restarts=0)(_ScoringActor)
        try:
            self.ref = ray.put(scorer)  # shipped once; each actor deserialises its own copy
        except (TypeError, ValueError, AttributeError) as err:  # what pickling raises
            raise DataError(
                f"Ray scoring: the scorer {getattr(scorer, 'name', scorer)!r} cannot be sent to the "
                f"workers ({type(err).__name__}: {err})",
                hint="runner: local scores it here",
            ) from None
        self.actors = [self._start(i) for i in range(self.n)]

    def _start(self, index: int):
        return self.cls.remote(self.ref, index, self.n)

    def run(self, batches: list) -> dict:
        ray, todo, idle = self.ray, deque(range(len(batches))), deque(range(self.n))
        results, pending, tries = {}, {}, Counter()
        try:
            while todo or pending:
                while idle and todo:
                    slot, b = idle.popleft(), todo.popleft()
                    pending[self.actors[slot].score.remote(batches[b])] = (slot, b)
                ready, _ = ray.wait(list(pending), num_returns=1)
                slot, b = pending.pop(ready[0])
                try:
                    results[b], delta = ray.get(ready[0])
                except ray.exceptions.RayTaskError as err:  # the scorer raised: as it would here
                    cause = getattr(err, "cause", None)
                    raise (cause if isinstance(cause, Exception) else err) from None
                except (
                    ray.exceptions.RayActorError,
                    ray.exceptions.WorkerCrashedError,
                    ray.exceptions.ObjectLostError,
                ) as err:
                    self._retry(slot, b, tries, err)
                    todo.appendleft(b)
                else:
                    self._merge(delta)
                idle.append(slot)
        finally:
            for actor in self.actors:
                ray.kill(actor)
        return results

    def _retry(self, slot: int, b: int, tries: Counter, err) -> None:
        """Replace the dead actor of ``slot``; give up after ``max_retries`` tries of batch ``b``."""
        tries[b] += 1
        if tries[b] > self.options.max_retries:
            raise DataError(
                f"Ray scoring: batch {b} failed {tries[b]} times, its worker died each time "
                f"({type(err).__name__}: {str(err)[:300]})",
                hint="check the Ray logs (memory, the scorer's imports on the workers)",
            )
        self.ray.kill(self.actors[slot])
        self.actors[slot] = self._start(slot)

    def _merge(self, delta: dict) -> None:
        merge = getattr(self.scorer, "merge_report", None)
        if callable(merge) and delta:
            merge(delta)
