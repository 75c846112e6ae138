"""What a verdict may rest on (issue 61): the card's flags bind.

A finished cell is flagged **wide** when its EER's 95% CI is wider than ``max_ci_width`` and
**small** when its evaluation is small (too few test speakers or a degenerate interval:
:mod:`sparc_eval.metrics.small`); an attacker is flagged **weak** by the Attacker strength rules
(:func:`sparc_eval.jobs.card.verdicts.strength`). Every verdict or comparison that involves a
flagged cell or attacker says "no verdict" and why, instead of a finding: a verdict drawn from an
interval the card itself calls untrustworthy would be surer than its evidence.
"""

from __future__ import annotations

from ...metrics.small import small_reason
from ..tables import served_by_back_end

WIDE, SMALL, WEAK = "wide", "small", "weak"


def cell_flags(cell: dict | None, max_ci_width: float) -> dict:
    """{flag: reason} of one finished cell (wide, small); empty when nothing is flagged."""
    cell = cell or {}
    if cell.get("status") != "ok":
        return {}
    overall = cell.get("overall") or {}
    found = {}
    ci = (overall.get("ci95") or {}).get("eer")
    if ci and None not in ci[:2] and ci[1] - ci[0] > max_ci_width:
        found[WIDE] = f"95% CI [{ci[0]:.1%}, {ci[1]:.1%}] is wider than {max_ci_width:.0%}"
    small = small_reason(overall)
    if small:
        found[SMALL] = small
    return found


class Flags:
    """The card's flags: per cell (where, attacker, scenario) and per attacker, and the reason a
    verdict that involves any of them is withheld."""

    def __init__(self, cells: dict, max_ci_width: float):
        self.cells = {
            (where, attacker, sc): found
            for where, by in cells.items()
            for attacker, by_sc in by.items()
            for sc, cell in by_sc.items()
            if (found := cell_flags(cell, max_ci_width))
        }
        self.attackers: dict = {}

    def flag_attacker(self, attacker: str, flag: str, reason: str) -> None:
        self.attackers.setdefault(attacker, {})[flag] = reason

    def withheld(self, cells=(), attackers=()) -> str | None:
        """The "no verdict: ..." sentence naming the first flagged cell or attacker involved."""
        for where, attacker, sc in cells:
            for flag, why in self.cells.get((where, attacker, sc), {}).items():
                return f"no verdict: {attacker} ({where}, {sc}) is flagged {flag}: {why}"
        for attacker in dict.fromkeys(attackers):
            for flag, why in self.attackers.get(attacker, {}).items():
                return f"no verdict: {attacker} is flagged {flag}: {why}"
        return None


def semi_informed_attack(cell: dict) -> bool:
    """A finished semi-informed cell of an attacker that trains on anonymized speech from its audio:
    not a refusal, not a words reader, not a pretrained encoder with only its back-end adapted."""
    needs = cell.get("needs") or {}
    return (
        cell.get("status") == "ok"
        and bool(needs.get("audio"))
        and bool(needs.get("training"))
        and not served_by_back_end(cell)
    )


def semi_informed_ran(cells: dict, where: str | None = None) -> bool:
    """True when some anonymizer (or ``where`` alone) was attacked semi-informed by such an attacker."""
    return any(
        semi_informed_attack(by_sc.get("semi-informed") or {})
        for name, by in cells.items()
        if where in (None, name)
        for by_sc in by.values()
    )
