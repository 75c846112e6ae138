"""Pretrained speaker-verification models, loaded from a local snapshot, as attackers.

``source`` names a folder: a SpeechBrain pretrained-interface folder (``hyperparams.yaml`` +
``embedding_model.ckpt``, as ``speechbrain/spkrec-ecapa-voxceleb``) or a Hugging Face x-vector
snapshot (``config.json`` + ``preprocessor_config.json`` + weights, as
``microsoft/wavlm-base-plus-sv``). Weights are never downloaded here: a hub id is refused with
the command that fetches it elsewhere.

- :mod:`.source`: checks ``source`` and tells the two formats apart, before any audio is read
- :mod:`.speechbrain_encoder`, :mod:`.xvector_encoder`: one encoder per format
- :mod:`.encoder`, :mod:`.batching`: what both encoders share; the batches they embed
- :mod:`.attacker`: :class:`~attackers.pretrained.attacker.PretrainedAttacker`, the attacker built on them
"""
