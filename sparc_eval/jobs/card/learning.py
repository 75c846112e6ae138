"""Learning curves of trained attackers, so that privacy is not over-estimated by a starved attacker.

With ``learning_curve: True`` every trained attacker is trained again on nested, seeded shares of
its training speakers (``learning_fractions``, default 25% and 50%; 100% is its main cell) and
scored on the same evaluation split. When its EER falls from the 50% to the 100% point (the paired
95% CI of that difference lies below 0, the card's rule for every difference), more training data
would likely lower it further, and the card says so.
"""

from __future__ import annotations

from dataclasses import replace

from .flags import cell_flags
from .settings import CardSettings

ORIGINAL = "original"


def _trained(cells: dict, name: str) -> list:
    """(attacker, scenario) of every cell of ``name`` whose attacker trains and ran."""
    return [
        (a, sc)
        for a, by in cells[name].items()
        for sc, c in by.items()
        if c.get("status") == "ok" and (c.get("needs") or {}).get("training")
    ]


def _label(fraction: float) -> str:
    return f"train{round(100 * fraction)}"


def learning_cells(
    card: CardSettings, cells: dict, evalset, anonymized: dict, ctx, run_cell
) -> dict:
    """{(where, attacker, scenario): {fraction: cell}} for the shares below 100%; ``run_cell`` is
    the card's way of running one cell (``sparc_eval.jobs.card.run._cell``)."""
    specs = {a.name: a for a in card.attackers}
    out = {}
    for where in cells:
        corpora = None if where == ORIGINAL else anonymized[where]
        for attacker, sc in _trained(cells, where):
            points = {}
            for fraction in card.learning_fractions:
                spec = replace(
                    specs[attacker],
                    overrides={**specs[attacker].overrides, "train_speaker_fraction": fraction},
                )
                points[fraction] = run_cell(
                    card, spec, corpora, sc, evalset, ctx, variant=_label(fraction)
                )
            out[(where, attacker, sc)] = points
    return out


def learning_curves(card: CardSettings, cells: dict, extra: dict, reader) -> list:
    rows = []
    for (where, attacker, sc), points in extra.items():
        full = cells[where][attacker][sc]
        eers = {
            f: (c["overall"]["eer"] if c.get("status") == "ok" else None) for f, c in points.items()
        }
        eers[1.0] = full["overall"]["eer"]
        row = {
            "where": where,
            "attacker": attacker,
            "scenario": sc,
            "eer": {str(f): e for f, e in sorted(eers.items())},
            "warning": None,
        }
        half = points.get(0.5)
        if half and half.get("status") == "ok":
            found = reader.compare_folders(half["folder"], full["folder"], card)
            if found:
                lo, hi = found["eer_diff_ci95"]
                row["diff_50_100"], row["ci95"] = found["eer_diff"], [lo, hi]
                row["withheld"] = (
                    f"no verdict: {found['small']}"
                    if found.get("small")
                    else _withheld(card, reader, (where, attacker, sc), half)
                )
                # the paired CI of (all - half) excludes 0: more data still helps (no verdict on
                # too few speakers, or on a flagged cell or attacker)
                if hi is not None and hi < 0 and not row["withheld"]:
                    row["warning"] = (
                        f"{attacker} ({where}, {sc}): EER {eers[0.5]:.1%} with 50% of the training "
                        f"speakers, {eers[1.0]:.1%} with all: more training data would likely lower it"
                    )
        rows.append(row)
    return rows


def _withheld(card: CardSettings, reader, key: tuple, half: dict) -> str | None:
    """Why no verdict is drawn from this curve: a flagged full cell, half cell or attacker."""
    flags = getattr(reader, "flags", None)
    if flags is None:
        return None
    found = flags.withheld(cells=[key], attackers=[key[1]])
    half_flags = cell_flags(half, card.max_ci_width)
    if found or not half_flags:
        return found
    flag, why = next(iter(half_flags.items()))
    return f"no verdict: {key[1]} with 50% of its training speakers is flagged {flag}: {why}"
