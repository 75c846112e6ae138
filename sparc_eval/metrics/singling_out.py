"""Singling out (Vauquier et al., "Legally validated evaluation framework for voice
anonymization", Interspeech 2025), from an attacker's speaker embeddings (:doc:`/definitions`).

The attacker holds one enrollment embedding per speaker and a threshold: the predicate
``p(x) = 1{cos(x, enrollment) > threshold}``. Among N test conversations, one per speaker (the
attacker's own speaker and N - 1 drawn at random), isolation succeeds when the predicate fires on
exactly one, whoever's it is. The threshold is calibrated so that the predicate fires on 1/N of
held-out calibration conversations: with M calibration conversations per speaker, M of the N M
calibration scores pass, so it lies midway between the M-th and (M+1)-th highest. Singling out is
the isolation rate over enrollment speakers, draws of the N speakers (runs) and conversation
splits (folds); a predicate that knows nothing isolates at N (1/N) (1 - 1/N)^(N-1), about
exp(-1) = 0.37 (the trivial baseline).

Conversations. In the paper a conversation of length L is L utterances of one speaker, their
embeddings averaged (an utterance is a short Common Voice sentence). Here the unit is an utterance,
or, with ``conversation_of`` (utterance id -> episode, e.g. the manifest's ``episode``), all of a
speaker's utterances in one episode averaged (an utterance without an episode is a unit of its
own); a conversation is L units. Enrollment embeddings average all of a speaker's enrollment
utterances (the plan's split; the paper averages 30 utterances of a separate set); test and
calibration conversations come from every other utterance, never from enrollment. Each fold
shuffles a speaker's K units: the first L form its test conversation, and its M calibration
conversations are the first M L-combinations of the rest. A speaker needs C(K - L, L) >= M
(K >= 10 at L = 1, M = 9), else it is left out: the 1/N calibration holds only when every speaker
brings M calibration conversations (``legal_eval`` keeps such speakers with fewer).

Parameters and their sources (all in :class:`SinglingOutSettings`):

- L = 1: the package's ``--conversation-length`` default, the first of the paper's L = 1, 3 and 30
  (Figure 1);
- M = 9: the paper's threshold, "the average of the 9th and 10th similarity scores"
  (``legal_eval.embeddings.build_conversations(max_calibration=9)``, ``--max-calibration 9``);
- N: the paper's grid, 30, 100 and doubling up to all speakers
  (``legal_eval.sweeps.geometric_speaker_counts``), cut to the speakers at hand;
- 5 runs (``singling_out_sweep(n_runs=5)``), 10 folds (``legal-eval singling-out --n-folds 10``;
  the original code's fold loop ran over the 10 conversations per speaker), seed 0, folds that
  re-split the conversations (``vary_folds=True``; the original code froze one split).

The random draws repeat the package's exactly (``legal_eval`` 2.1.0): the split of the speaker at
position p in fold f uses ``default_rng((seed, p, f)).permutation(K)``, and run r of enrollment
row i at N uses ``default_rng((seed, N, f, i, r)).choice(n - 1, N - 1, replace=False)``, so the
same embeddings give the same outcomes (``tests/test_singling_out.py``). Speakers and units are
taken in sorted order.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np

from .bootstrap import percentile_ci

SOURCE = (
    "Vauquier et al., 'Legally validated evaluation framework for voice anonymization', "
    "Interspeech 2025 (checked against voice-anonymization-legal-eval 2.1.0)"
)
DEFINITION = (
    "share of (enrollment speaker, run, fold) draws in which the predicate cos(x, enrollment) > t "
    "fires on exactly one of N test conversations (the speaker's own and N - 1 drawn at random), "
    "t midway between the M-th and (M+1)-th highest of the N M calibration scores; chance is "
    "N (1/N) (1 - 1/N)^(N-1), about exp(-1)"
)
#: The first N of the paper's grid (Figure 1; ``legal_eval.sweeps.geometric_speaker_counts``).
PAPER_FIRST_N = 30
#: The second N of the paper's grid, doubled from then on up to every speaker.
PAPER_SECOND_N = 100


@dataclass(frozen=True)
class SinglingOutSettings:
    conversation_length: int = 1  # L (legal-eval --conversation-length; paper: 1, 3, 30)
    n_calibration: int = 9  # M (paper: "average of the 9th and 10th similarity scores")
    speaker_counts: Optional[tuple] = None  # N values; None: the paper's grid, cut to the data
    n_runs: int = 5  # draws of the N speakers per enrollment speaker and fold (legal-eval)
    n_folds: int = 10  # conversation splits (legal-eval --n-folds; the original code's 10)
    seed: int = 0  # legal-eval's default
    vary_folds: bool = True  # False: one split for all folds, as the original code did
    n_boot: int = 1000  # resamples of enrollment speakers for the 95% CI (GUIDE, section 5)


class SinglingOutData(NamedTuple):
    enroll_speakers: list  # every enrollment speaker, sorted: row i seeds the draws
    enroll_vectors: np.ndarray  # (n_enroll, d), unit rows
    dataset_speakers: list  # speakers with enough units, sorted: position p seeds the split
    units: list  # per dataset speaker, (K, d) unit rows
    rows: np.ndarray  # enrollment rows that are evaluated (also dataset speakers)
    columns: np.ndarray  # their dataset columns
    n_excluded: int  # speakers outside enrollment with too few units


def chance_rate(n: int) -> float:
    """Isolation rate of a predicate that fires with probability 1/N and knows nothing."""
    return float((1.0 - 1.0 / n) ** (n - 1))


def min_units(length: int, n_calibration: int) -> int:
    """The fewest units K that give one test and M calibration conversations: C(K-L, L) >= M."""
    k = 2 * length
    while math.comb(k - length, length) < n_calibration:
        k += 1
    return k


def paper_speaker_counts(n_speakers: int) -> list:
    """The paper's N grid (30, 100, 200, ... doubling), below n_speakers, then n_speakers."""
    grid, n = [PAPER_FIRST_N], PAPER_SECOND_N
    while n < n_speakers:
        grid.append(n)
        n *= 2
    return [g for g in grid if g < n_speakers] + [n_speakers]


# --------------------------------------------------------------------------------- embeddings


def _unit_rows(x) -> np.ndarray:
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm == 0, 1.0, norm)


def _mean_vector(vectors: list) -> np.ndarray:
    """L2-normalised mean of L2-normalised embeddings (the paper's extractor normalises each)."""
    return _unit_rows(_unit_rows(np.vstack(vectors)).mean(axis=0))[0]


def _enrollment(embeddings, enroll) -> tuple:
    """(sorted speakers, unit rows): each speaker's enrollment utterances averaged."""
    speakers = sorted(s for s, ids in enroll.items() if any(u in embeddings for u in ids))
    vectors = [
        _mean_vector([embeddings[u] for u in enroll[s] if u in embeddings]) for s in speakers
    ]
    return speakers, np.vstack(vectors) if vectors else np.empty((0, 0))


def _dataset_units(embeddings, utt2spk, enroll, conversation_of) -> dict:
    """speaker -> (K, d) unit rows, units sorted, from every utterance outside enrollment."""
    held = {u for ids in enroll.values() for u in ids}
    grouped: dict = {}
    for utt, vector in embeddings.items():
        if utt in held or utt not in utt2spk:
            continue
        episode = conversation_of.get(utt) if conversation_of is not None else None
        key = ("episode", str(episode)) if episode is not None else ("utterance", str(utt))
        grouped.setdefault(utt2spk[utt], {}).setdefault(key, []).append(vector)
    return {
        spk: np.vstack([_mean_vector(by_unit[k]) for k in sorted(by_unit)])
        for spk, by_unit in grouped.items()
    }


def _what_is_needed(need: int, conversation_of, s: SinglingOutSettings) -> str:
    unit = "utterances" if conversation_of is None else "episodes"
    return (
        f"at least {need} {unit} outside enrollment (1 test and {s.n_calibration} calibration "
        f"conversations of L={s.conversation_length})"
    )


def prepare(embeddings, utt2spk, enroll, conversation_of, s: SinglingOutSettings):
    """The :class:`SinglingOutData` of a plan's embeddings, or the reason it cannot be built."""
    enroll_speakers, enroll_vectors = _enrollment(embeddings, enroll)
    units = _dataset_units(embeddings, utt2spk, enroll, conversation_of)
    need = min_units(s.conversation_length, s.n_calibration)
    dataset = sorted(spk for spk, u in units.items() if len(u) >= need)
    what = _what_is_needed(need, conversation_of, s)
    if len(dataset) < 2:
        return f"needs 2 or more speakers with {what}; {len(dataset)} of {len(units)} have them"
    index = {spk: i for i, spk in enumerate(dataset)}
    rows = [i for i, spk in enumerate(enroll_speakers) if spk in index]
    if not rows:
        n_enroll = len(enroll_speakers)
        return (
            f"no enrollment speaker ({n_enroll}) is among the {len(dataset)} speakers with {what}"
        )
    return SinglingOutData(
        enroll_speakers,
        enroll_vectors,
        dataset,
        [units[spk] for spk in dataset],
        np.array(rows),
        np.array([index[enroll_speakers[i]] for i in rows]),
        len(units) - len(dataset),
    )


# --------------------------------------------------------------------------------- one fold


def _first_combinations(n_rest: int, length: int, n_calibration: int) -> np.ndarray:
    """(M, L) positions: the first M L-combinations of the remaining units, in itertools order."""
    combos = itertools.islice(itertools.combinations(range(n_rest), length), n_calibration)
    return np.array(list(combos), dtype=np.intp)


def _split(units: np.ndarray, position: int, fold: int, s: SinglingOutSettings) -> tuple:
    """(test conversation (d,), calibration conversations (M, d)) of one speaker in one fold."""
    key = (s.seed, position, fold) if s.vary_folds else (s.seed, position)
    order = np.random.default_rng(key).permutation(len(units))
    length = s.conversation_length
    rest = order[length:]
    combos = _first_combinations(len(rest), length, s.n_calibration)
    test = _unit_rows(units[order[:length]].mean(axis=0))[0]
    calibration = _unit_rows(units[rest[combos]].mean(axis=1))
    return test, calibration


def fold_scores(data: SinglingOutData, fold: int, s: SinglingOutSettings) -> tuple:
    """Cosine scores of every enrollment speaker against this fold's conversations:
    test (n_enroll, n_dataset) and calibration (n_enroll, n_dataset, M)."""
    splits = [_split(u, p, fold, s) for p, u in enumerate(data.units)]
    test = np.vstack([t for t, _ in splits])
    calibration = np.vstack([c for _, c in splits])
    n_enroll, n_dataset = len(data.enroll_speakers), len(splits)
    cal = (data.enroll_vectors @ calibration.T).reshape(n_enroll, n_dataset, s.n_calibration)
    return data.enroll_vectors @ test.T, cal


def draw_speakers(n: int, n_dataset: int, own: int, key: tuple) -> np.ndarray:
    """The own column, then N - 1 distinct others drawn at random (legal_eval's draw)."""
    others = np.random.default_rng(key).choice(n_dataset - 1, size=n - 1, replace=False)
    return np.concatenate(([own], others + (others >= own)))


def isolated(test_row, cal_row, selected: np.ndarray, n_calibration: int) -> np.ndarray:
    """Per draw (a row of ``selected``): whether exactly one selected test score passes the
    threshold midway between the M-th and (M+1)-th highest selected calibration scores."""
    cal = cal_row[selected].reshape(len(selected), -1)
    above = cal.shape[1] - n_calibration  # ascending index of the M-th highest
    top = np.partition(cal, (above - 1, above), axis=1)
    threshold = (top[:, above - 1] + top[:, above]) / 2.0
    return np.count_nonzero(test_row[selected] > threshold[:, None], axis=1) == 1


def isolation_outcomes(data: SinglingOutData, counts, s: SinglingOutSettings) -> dict:
    """N -> (folds, evaluated speakers, runs) isolation outcomes; scores computed once per fold."""
    n_dataset = len(data.dataset_speakers)
    out = {n: np.zeros((s.n_folds, len(data.rows), s.n_runs), dtype=bool) for n in counts}
    for fold in range(s.n_folds):
        test, cal = fold_scores(data, fold, s)
        for n in counts:
            for i, (row, own) in enumerate(zip(data.rows, data.columns)):
                keys = [(s.seed, n, fold, int(row), run) for run in range(s.n_runs)]
                selected = np.vstack([draw_speakers(n, n_dataset, int(own), k) for k in keys])
                out[n][fold, i] = isolated(test[row], cal[row], selected, s.n_calibration)
    return out


# --------------------------------------------------------------------------------- the block


def _summary(outcomes: np.ndarray, n: int, s: SinglingOutSettings) -> dict:
    """Rate, the paper's spread (std over (speaker, fold) means) and a CI over speakers."""
    per_draw = outcomes.mean(axis=2)  # (folds, speakers): the values the paper averages
    per_speaker = per_draw.mean(axis=0)
    rng = np.random.default_rng(s.seed)
    resampled = per_speaker[rng.integers(0, per_speaker.size, (s.n_boot, per_speaker.size))]
    return {
        "rate": float(per_draw.mean()),
        "std": float(per_draw.std()),
        "ci95": percentile_ci(resampled.mean(axis=1)) if s.n_boot else [None, None],
        "chance": chance_rate(n),
    }


def _counts(n_dataset: int, s: SinglingOutSettings):
    if s.speaker_counts is None:
        return paper_speaker_counts(n_dataset)
    return sorted({int(n) for n in s.speaker_counts if 2 <= int(n) <= n_dataset})


def singling_out_block(
    embeddings, utt2spk, *, enroll, conversation_of=None, settings=SinglingOutSettings()
) -> dict:
    """Singling out of an attacker's embeddings, as a JSON-ready block.

    ``embeddings``: utterance id -> vector (enrollment and trial utterances); ``utt2spk``:
    utterance id -> speaker; ``enroll``: speaker -> enrollment utterance ids (a plan's
    ``split.enroll``); every other embedded utterance is test or calibration material.
    ``conversation_of``: utterance id -> episode, to make a speaker's episode the unit of a
    conversation (None: the utterance). ``{"not_applicable": reason}`` when the data cannot
    support it. The headline ``rate`` is at the largest N (every eligible speaker)."""
    s = settings
    data = prepare(embeddings, utt2spk, enroll, conversation_of, s)
    if isinstance(data, str):
        return {"not_applicable": f"singling out {data}"}
    counts = _counts(len(data.dataset_speakers), s)
    if not counts:
        return {
            "not_applicable": f"no N in {list(s.speaker_counts)} lies in [2, {len(data.dataset_speakers)}]"
        }
    per_n = {n: _summary(o, n, s) for n, o in isolation_outcomes(data, counts, s).items()}
    headline = per_n[counts[-1]]
    return {
        **headline,
        "N": counts[-1],
        "per_N": {str(n): per_n[n] for n in counts},
        "n_speakers": len(data.rows),
        "n_dataset_speakers": len(data.dataset_speakers),
        "n_excluded_speakers": data.n_excluded,
        "conversation_unit": "utterance" if conversation_of is None else "episode",
        "L": s.conversation_length,
        "M": s.n_calibration,
        "runs": s.n_runs,
        "folds": s.n_folds,
        "seed": s.seed,
        "vary_folds": s.vary_folds,
        "ci_unit": "enrollment speaker",
        "definition": DEFINITION,
        "source": SOURCE,
    }
