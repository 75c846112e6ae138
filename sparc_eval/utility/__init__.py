"""Utility: what anonymized speech keeps for its users. :mod:`.metrics` holds the card's utility
metrics (WER, rho_F0, G_VD) and their registry; :mod:`.wer` the word error rate itself and its
normalisers; :mod:`.f0` the F0 trackers and correlations rho_F0 is made of."""
