"""What the card concludes from its cells: content rows, voice leakage beyond content, the
headline privacy figure, attacker strength, and anonymizers compared pairwise.

Content (content-leakage paper, Table 1): the phone-only attacker on the G2P of the original
transcripts is the **content bound**, what a perfect voice anonymizer (error-free STT-TTS) still
leaves; the same attacker on the words the anonymized speech says is the **content this
anonymizer leaves** (equal to the bound for an anonymizer that keeps the words). An audio attacker
on anonymized speech is read against the latter, on the same trials (paired bootstrap over test
speakers): lower EER means it identifies speakers beyond their words (the voice leaks); within the
CI, its success is explained by content; higher means it finds less than the words alone give, so
the anonymizer's privacy is bounded by the content row, not by this attacker.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from ..errors import DataError
from ..leakage.cells import cell_trials
from ..leakage.compare import ci_verdict, compare_cells, verdict as eer_verdict
from ..metrics.small import too_few
from .settings import CardSettings

ORIGINAL = "original"


class CellTrials:
    """Each finished cell's trials, read once."""

    def __init__(self, root: Path, cells: dict):
        self.root, self.cells, self._trials = Path(root), cells, {}

    def ok(self, where, attacker, scenario) -> bool:
        return self.cells.get(where, {}).get(attacker, {}).get(scenario, {}).get("status") == "ok"

    def cell(self, where, attacker, scenario) -> dict:
        return self.cells[where][attacker][scenario]

    def trials(self, folder: str):
        if folder not in self._trials:
            self._trials[folder] = cell_trials(self.root / folder)
        return self._trials[folder]

    def compare_folders(self, folder_a: str, folder_b: str, s: CardSettings):
        """b - a for two finished cells given by their folders (relative to the card's folder)."""
        boot = s.evaluation.bootstrap
        if boot.n_boot <= 0:
            return None
        try:
            return compare_cells(self.trials(folder_a), self.trials(folder_b), n_boot=boot.n_boot, seed=boot.seed,
                                 unit=boot.unit, min_speakers=s.evaluation.min_verdict_speakers)
        except DataError:
            return None

    def compare(self, a, b, s: CardSettings):
        """b - a for two cells (where, attacker, scenario); None when either did not run."""
        if not (self.ok(*a) and self.ok(*b)):
            return None
        return self.compare_folders(self.cell(*a)["folder"], self.cell(*b)["folder"], s)


def _eer(cell: dict) -> dict | None:
    if not cell or cell.get("status") != "ok":
        return None
    overall = cell["overall"]
    return {"eer": overall["eer"], "ci95": overall["ci95"]["eer"] if overall.get("ci95") else None,
            "n_trial_speakers": cell.get("n_trial_speakers"), "small": overall.get("small_evaluation")}


def _needs(cell: dict, what: str) -> bool:
    return bool((cell.get("needs") or {}).get(what))


def _is_text(cell: dict) -> bool:
    return _needs(cell, "words") and not _needs(cell, "split")


def content_rows(s: CardSettings, cells: dict) -> dict:
    if s.content_attacker is None:
        return {"not_applicable": "no content_attacker is set"}
    bound = _eer(cells[ORIGINAL][s.content_attacker][ORIGINAL])
    left = {name: {sc: _eer(by[s.content_attacker][sc]) for sc in s.scenarios}
            for name, by in cells.items() if name != ORIGINAL}
    text = {}
    for attacker, by in cells[ORIGINAL].items():
        if _is_text(by[ORIGINAL]):
            text[attacker] = {"original": _eer(by[ORIGINAL]),
                              **{name: _eer(c[attacker].get("lazy-informed")) for name, c in cells.items() if name != ORIGINAL}}
    return {"attacker": s.content_attacker, "bound": bound, "left": left, "text": text}


def _beyond_content_verdict(cmp: dict) -> str:
    return ci_verdict(cmp, below="lower: it identifies speakers beyond their words (the voice leaks)",
                      above="higher: it finds less than the words alone give; privacy is bounded by the content "
                            "row, not by this attacker",
                      within="within the CI: its success is explained by content")


def voice_beyond_content(s: CardSettings, cells: dict, reader: CellTrials) -> list:
    rows = []
    if s.content_attacker is None:
        return rows
    for name, by in cells.items():
        if name == ORIGINAL:
            continue
        for attacker, by_scenario in by.items():
            for sc, cell in by_scenario.items():
                if attacker == s.content_attacker or not _needs(cell, "audio"):
                    continue
                found = reader.compare((name, s.content_attacker, sc), (name, attacker, sc), s)
                if found:
                    rows.append({"anonymizer": name, "attacker": attacker, "scenario": sc, "eer": found["eer_b"],
                                 "content_eer": found["eer_a"], "diff": found["eer_diff"],
                                 "ci95": found["eer_diff_ci95"], "paired": found["paired"],
                                 "verdict": _beyond_content_verdict(found)})
    return rows


def headlines(s: CardSettings, cells: dict, content: dict) -> dict:
    """Per anonymizer: the lowest EER of any attacker on its speech, naming the attacker, beside the bound."""
    out = {}
    for name, by in cells.items():
        if name == ORIGINAL:
            continue
        found = [(e["eer"], attacker, sc, e) for attacker, by_sc in by.items() for sc, cell in by_sc.items()
                 if (e := _eer(cell)) is not None]
        if not found:
            out[name] = {"not_applicable": "no attacker ran on this anonymizer's speech"}
            continue
        eer, attacker, sc, e = min(found, key=lambda x: x[0])
        out[name] = {"eer": eer, "ci95": e["ci95"], "small": e["small"], "attacker": attacker, "scenario": sc,
                     "content_bound": (content.get("bound") or {}).get("eer")}
    return out


def _too_wide(e: dict | None, width: float) -> bool:
    return bool(e and e["ci95"] and e["ci95"][1] - e["ci95"][0] > width)


def _small_warnings(original: dict | None, anonymized: dict) -> list:
    """What a small evaluation can claim (sparc_eval.metrics.small): too few speakers or a degenerate
    interval, with the resampling-free bound of each such cell."""
    found = [("original speech", original)] + [(f"{name} {sc}", e) for name, by_sc in anonymized.items()
                                               for sc, e in by_sc.items()]
    small = [(where, e["small"]) for where, e in found if e and e.get("small")]
    if not small:
        return []
    bounds = "; ".join(f"{where} EER {e['eer_bound95'][0]:.1%}-{e['eer_bound95'][1]:.1%}" for where, e in small)
    few = [e for _, e in small if too_few(e)]
    if few:
        return [f"too few speakers for any verdict: {few[0]['n_speakers']} test speakers (fewer than "
                f"{few[0]['min_speakers']}); a bootstrap over so few cannot show the uncertainty. Resampling-free "
                f"95% bounds, counted over speakers: {bounds}"]
    return [f"a degenerate interval (no resample can vary) is no narrow CI; no verdict rests on it. "
            f"Resampling-free 95% bounds, counted over speakers: {bounds}"]


def strength(s: CardSettings, cells: dict) -> dict:
    """Each attacker's EER on original speech beside its anonymized EERs, and the warnings a reader needs."""
    out = {}
    for attacker, by in cells[ORIGINAL].items():
        original = _eer(by[ORIGINAL])
        warnings = []
        if original is None:
            warnings.append(f"it did not run on original speech: {by[ORIGINAL].get('reason')}")
        elif original["eer"] >= s.weak_attacker_eer:
            warnings.append(f"too weak to certify anything: EER {original['eer']:.1%} on original speech "
                            f"(at least {s.weak_attacker_eer:.0%}, near chance)")
        anonymized = {name: {sc: _eer(c) for sc, c in cells[name][attacker].items()} for name in cells if name != ORIGINAL}
        if _too_wide(original, s.max_ci_width) or any(_too_wide(e, s.max_ci_width) for by_sc in anonymized.values()
                                                       for e in by_sc.values()):
            warnings.append(f"too few speakers for any verdict: a 95% CI is wider than {s.max_ci_width:.0%}")
        warnings += _small_warnings(original, anonymized)
        out[attacker] = {"original": original, "anonymized": anonymized, "warnings": warnings}
    return out


def _utility_comparisons(s: CardSettings, a: str, b: str, utility: dict, inputs: dict) -> dict:
    out = {}
    for metric_name, metric in s.utility.items():
        ra, rb = utility[a].get(metric_name, {}), utility[b].get(metric_name, {})
        if ra.get("value") is None or rb.get("value") is None:
            continue
        if callable(getattr(metric, "compare", None)):
            found = metric.compare(ra, rb, inputs[a], inputs[b])
        else:
            found = {"diff": rb["value"] - ra["value"], "ci95": None}
        if found.get("ci95"):
            higher = bool(ra.get("higher_is_better"))
            better = b if (found["diff"] > 0) == higher else a
            said = f"{better} keeps more utility ({'higher' if higher else 'lower'} {metric_name})"
            found["verdict"] = ci_verdict({"eer_diff": found["diff"], "eer_diff_ci95": found["ci95"]},
                                          below=said, above=said, within="no significant difference (the 95% CI contains 0)")
        out[metric_name] = found
    return out


def anonymizer_comparisons(s: CardSettings, cells: dict, utility: dict, inputs: dict, reader: CellTrials) -> list:
    """Every pair of anonymizers: EER differences per attacker and scenario (same trials: paired),
    and utility differences."""
    names = [n for n in cells if n != ORIGINAL]
    rows = []
    for a, b in combinations(names, 2):
        eers = []
        for attacker in cells[a]:
            for sc in s.scenarios:
                found = reader.compare((a, attacker, sc), (b, attacker, sc), s)
                if found:
                    eers.append({"attacker": attacker, "scenario": sc, "eer_a": found["eer_a"], "eer_b": found["eer_b"],
                                 "diff": found["eer_diff"], "ci95": found["eer_diff_ci95"], "paired": found["paired"],
                                 "verdict": eer_verdict(found, a, b, "is identified more easily")})
        rows.append({"a": a, "b": b, "eer": eers, "utility": _utility_comparisons(s, a, b, utility, inputs)})
    return rows


def card_verdicts(s: CardSettings, cells: dict, utility: dict, inputs: dict, learning: dict | None = None) -> dict:
    from .learning import learning_curves

    reader = CellTrials(s.output_folder, cells)
    content = content_rows(s, cells)
    curves = learning_curves(s, cells, learning or {}, reader)
    found = strength(s, cells)
    for row in curves:
        if row["warning"]:
            found[row["attacker"]]["warnings"].append(row["warning"])
    return {"headline": headlines(s, cells, content), "content": content,
            "voice_beyond_content": voice_beyond_content(s, cells, reader), "strength": found,
            "learning_curves": curves if s.learning_curve else {"not_applicable": "learning_curve: False"},
            "comparisons": anonymizer_comparisons(s, cells, utility, inputs, reader)}
