"""The anonymizer card: one command from an anonymizer to its privacy and utility, read against
what the words give away (``recipes/evaluate_anonymizer.py``, ``sparc-eval evaluate``)."""
