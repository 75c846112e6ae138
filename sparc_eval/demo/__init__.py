"""The built-in demo corpus: synthetic espeak-ng speakers reading books or talking in pairs."""

from ..data.corpora.specs import is_demo_corpus
from .corpus import build_demo_corpus, plan_demo_corpus, summarise

__all__ = ["build_demo_corpus", "is_demo_corpus", "plan_demo_corpus", "summarise"]
