"""Data: what the attacks and anonymizers read.

- :mod:`.manifest`: utterances and speakers (the JSON-lines manifest contract);
- :mod:`.corpora`: corpus loaders (LibriSpeech, Kaldi dirs, EdAcc, SpAnE, SPARC, manifests);
- :mod:`.splits`: enrollment and trial splits (seeded, or VoicePrivacy's lists);
- :mod:`.plan`: an attack's data planned from its settings (training, enrollment, trials);
- :mod:`.attributes`: speaker attributes (sex, age, accent) normalised; :mod:`.words`: what speech says.
"""
