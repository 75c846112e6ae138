"""Transcribe once, many at a time (issue 31): batched faster-whisper decoding gives the per-file
loop's transcripts, the transcript cache is shared by WER and STT-TTS, and cache hits skip the ASR."""

import numpy as np
import pytest
import soundfile as sf

from anonymizers.stt_tts import SttTts
from sparc_eval.anonymization.options import RunnerOptions
from sparc_eval.anonymization.runner import anonymize_corpus
from sparc_eval.data.manifest import AudioRef, Manifest, Utterance
from sparc_eval.speech.asr import FasterWhisperASR, TranscriptCache, transcribe_utterances
from sparc_eval.speech.audio import read_utterance
from sparc_eval.utility.metrics import WordErrorRate

SR = 16000


class CountingASR:
    """Says each file's length in ms; counts every utterance it hears and each call's size."""

    def __init__(self, batch_size=1):
        self.batch_size, self.heard, self.calls = batch_size, 0, []

    def settings(self):
        return {"asr": "counting"}

    def group_size(self):
        return self.batch_size

    def transcribe(self, wav, sr):
        self.heard += 1
        self.calls.append(1)
        return f"word{round(len(wav) / sr * 1000)}"

    def transcribe_many(self, audios):
        self.heard += len(audios)
        self.calls.append(len(audios))
        return [f"word{round(len(w) / sr * 1000)}" for w, sr in audios]


class ToneTTS:
    def __init__(self, seconds=0.3):
        self.seconds = seconds

    def settings(self):
        return {"tts": "tone", "seconds": self.seconds}

    def synthesize(self, text):
        return np.full(int(SR * self.seconds), 0.1, np.float32), SR


def _corpus(folder, lengths_ms) -> Manifest:
    utterances = []
    for k, ms in enumerate(lengths_ms):
        path = folder / f"u{k}.wav"
        sf.write(path, np.random.default_rng(k).normal(0, 0.05, SR * ms // 1000), SR)
        utterances.append(Utterance(f"u{k}", f"s{k % 2}", "a word", audio=AudioRef(str(path))))
    return Manifest(utterances, name="tones")


def test_cache_hits_skip_the_asr_and_misses_go_in_batches(tmp_path):
    corpus = list(_corpus(tmp_path, [1000, 1100, 1200, 1300, 1400, 1500, 1600]))
    asr = CountingASR(batch_size=3)
    cache = TranscriptCache(tmp_path / "cache", asr)
    cache.put(corpus[1], "cached one")
    cache.put(corpus[4], "cached four")
    found = transcribe_utterances(asr, corpus, cache)
    assert asr.calls == [3, 2] and asr.heard == 5  # 7 utterances, 2 cached
    assert found["u1"] == "cached one" and found["u0"] == "word1000"
    assert [found[u.id] for u in corpus] == [cache.get(u) for u in corpus]  # all written
    again = CountingASR(batch_size=3)
    assert transcribe_utterances(again, corpus, TranscriptCache(tmp_path / "cache", again)) == found
    assert again.heard == 0
    # the WER metric reads and writes the same files
    wer = WordErrorRate(asr=again)
    assert wer.transcripts(corpus, str(tmp_path / "cache"), False) == found and again.heard == 0


def test_stt_tts_fills_the_wer_cache_and_reads_it_back(tmp_path):
    corpus = _corpus(tmp_path, [1000, 1100, 1200])
    asr = CountingASR()
    plain = SttTts(asr=asr, tts=ToneTTS())
    anonymizer = SttTts(asr=asr, tts=ToneTTS(), transcript_cache=str(tmp_path / "cache"))
    assert anonymizer.settings() == plain.settings()  # not a setting of the output
    out = anonymize_corpus(
        corpus, anonymizer, tmp_path / "stt", options=RunnerOptions(progress=False)
    )
    assert asr.heard == 3 and [u.extra["asr_text"] for u in out] == [
        "word1000",
        "word1100",
        "word1200",
    ]
    # WER with the same ASR settings: the original speech is not transcribed again
    wer = WordErrorRate(asr=CountingASR())
    hyp = wer.transcripts(list(corpus), str(tmp_path / "cache"), False)
    assert wer.asr.heard == 0 and hyp == {u.id: u.extra["asr_text"] for u in out}
    # another voice, the same words: a re-run does not run the ASR again (batched runner too)
    other = SttTts(asr=asr, tts=ToneTTS(0.4), transcript_cache=str(tmp_path / "cache"))
    again = anonymize_corpus(
        corpus,
        other,
        tmp_path / "stt2",
        options=RunnerOptions(progress=False, batch_size=2),
    )
    assert asr.heard == 3 and [u.extra["asr_text"] for u in again] == [
        u.extra["asr_text"] for u in out
    ]
    # batched transcription of cache misses: one transcribe_many call per batch
    fresh = SttTts(asr=CountingASR(), tts=ToneTTS(0.5), transcript_cache=str(tmp_path / "c2"))
    anonymize_corpus(
        corpus,
        fresh,
        tmp_path / "stt3",
        options=RunnerOptions(progress=False, batch_size=3),
    )
    assert fresh.asr.calls == [3]


@pytest.mark.slow("Whisper transcribes real LibriSpeech files twice: about 12 s")
def test_batched_faster_whisper_gives_the_per_file_transcripts(data_dir):
    from sparc_eval.data.corpora import load_kaldi_dir

    samples = list(load_kaldi_dir(data_dir / "librispeech_samples"))[:6]
    audios = [read_utterance(u) for u in samples]
    long = np.concatenate([w for w, _ in audios[:6]] * 2)  # over 30 s: the loop decodes it
    assert long.size > 30 * SR
    audios += [(np.zeros(SR, np.float32), SR), (np.zeros(0, np.float32), SR), (long, SR)]
    asr = FasterWhisperASR("tiny.en", batch_size=4, num_workers=2)
    loop = [asr.transcribe(w, sr) for w, sr in audios]
    per_file, decode = [], asr._decode
    asr._decode = lambda model, audio: per_file.append(audio.size) or decode(model, audio)
    assert asr.transcribe_many(audios) == loop  # 2 streams, 4 utterances per call
    assert long.size in per_file and len(per_file) <= 2, per_file  # the rest decoded in batches
    streams = FasterWhisperASR("tiny.en", num_workers=2)  # the default: per file, 2 streams
    assert streams.batch_size == 1 and streams.group_size() == 64
    assert streams.transcribe_many(audios) == loop
    assert loop[7] == "" and all(loop[:6]) and len(loop[8]) > len(loop[0])
    with pytest.raises(Exception, match="batch_size"):
        FasterWhisperASR("tiny.en", batch_size=0)


def test_the_card_points_a_transcribing_anonymizer_at_its_cache(tmp_path):
    from anonymizers.identity import Identity
    from sparc_eval.jobs.card.anonymized import share_transcripts

    stt = SttTts(asr=CountingASR(), tts=ToneTTS())
    share_transcripts(stt, tmp_path)
    assert stt.transcript_cache == str(tmp_path)
    mine = SttTts(asr=CountingASR(), tts=ToneTTS(), transcript_cache="elsewhere")
    share_transcripts(mine, tmp_path)
    assert mine.transcript_cache == "elsewhere"  # the user's choice stands
    identity = Identity()
    share_transcripts(identity, tmp_path)
    assert not hasattr(identity, "transcript_cache")
