"""The attack: the attacker contract, trials and their scores, evaluation, and the cell engine
the anonymizer card and the leakage comparison share.

- :mod:`.contract`: what an attacker is (:class:`Needs`, :class:`Attacker`, the base class
  :class:`AttackerBase` with the optional members' defaults) and how one is found;
- :mod:`.run`: an attacker run end to end on a data plan (fit, score, evaluate, write);
- :mod:`.trials`, :mod:`.scoring`: scored trials; :mod:`.evaluation`: their metrics;
- :mod:`.cells`, :mod:`.evaluation_set`: one attacker on one corpus under one condition.

``sparc_eval.attack.X`` for every name the one-module ``sparc_eval/attack.py`` had keeps working.
"""

from .contract import (
    ATTACKER_GROUP,
    Attacker,
    AttackerBase,
    Needs,
    attacker_class,
    check_attacker,
)
from .run import (
    EVALUATION_KEYS,
    LIBRARY_KEYS,
    AttackResult,
    attack,
    build_attacker,
    load_attack,
    not_applicable,
    prepare_attack,
    run_attack,
    run_description,
)

__all__ = [
    "ATTACKER_GROUP",
    "EVALUATION_KEYS",
    "LIBRARY_KEYS",
    "Attacker",
    "AttackerBase",
    "AttackResult",
    "Needs",
    "attack",
    "attacker_class",
    "build_attacker",
    "check_attacker",
    "load_attack",
    "not_applicable",
    "prepare_attack",
    "run_attack",
    "run_description",
]
