"""Speech backends: ASR (:mod:`.asr`), TTS (:mod:`.tts`, :mod:`.espeak`), the name -> backend
tables (:mod:`.backends`) and audio reading and resampling (:mod:`.audio`), used by the STT-TTS
anonymizer, the WER utility metric and the demo corpus."""
