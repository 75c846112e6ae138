"""Content leakage across corpora: the same attackers on several corpora, side by side.

Entry point: :func:`sparc_eval.jobs.leakage.run.compare_leakage` (``recipes/compare_leakage.py``,
``sparc-eval leakage``). Modules: :mod:`.evaluation_set` (what each corpus is evaluated on),
:mod:`.cells` (one attacker on one corpus), :mod:`.vocabulary`, :mod:`.report`; the bootstrap
differences of two cells are :mod:`sparc_eval.attack.compare`'s.
"""
