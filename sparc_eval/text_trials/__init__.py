"""SPARC's trial-building blocks, below the jobs: what the text evaluation
(:mod:`sparc_eval.jobs.text`), the leakage comparison and the text attackers (``attackers.text``)
share.

- :mod:`.trials`: probes, enrollments, trial types and conditions, tasks, topic controls
  (:mod:`.probes`, :mod:`.pairing`, :mod:`.speaker_trials`, :mod:`.attribute_trials`,
  :mod:`.materialise`, :mod:`.topic`, :mod:`.trial_set`);
- :mod:`.shared_text`: the detector of text many speakers say (read passages);
- :mod:`.protocol`: the paper's NaturalVoices and SPoRC protocols (A.1) and a run's departures;
- :mod:`.config`: the trial keys of an hparams file as a ``TrialConfig``;
- :mod:`.scoring`: a scorer on a trial set, here or over Ray (:mod:`.ray_scoring`).
"""
