"""Anonymizing a corpus: the runner (:mod:`.runner`: resumable, sharded, local or on Ray) and its
front door (:mod:`.cli`: ``sparc-eval anonymize`` and ``recipes/anonymize.py``)."""
