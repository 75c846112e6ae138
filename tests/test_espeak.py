"""The espeak-ng ctypes wrapper: 16 kHz audio, distinct voices, bit-exact isolated synthesis."""

import numpy as np
import pytest

from sparc_eval.errors import DataError
from sparc_eval.speech import espeak
from sparc_eval.speech.espeak import EspeakError, EspeakSynth, list_english_voices, list_variants

SENTENCE = "The skipper trimmed the sails near the lighthouse early that morning."


def _median_f0(audio: np.ndarray, sr: int = 16000) -> float:
    """Median F0 (Hz) of the loud frames, from the autocorrelation peak between 60 and 400 Hz."""
    frame, hop = 640, 320
    frames = [audio[i : i + frame] for i in range(0, len(audio) - frame, hop)]
    rms = np.array([np.sqrt(np.mean(f**2)) for f in frames])
    lo, hi = sr // 400, sr // 60
    f0 = []
    for f, r in zip(frames, rms):
        if r < 0.3 * rms.max():
            continue
        f = f - f.mean()
        ac = np.correlate(f, f, mode="full")[frame - 1 :]
        if ac[0] <= 0:
            continue
        lag = lo + int(np.argmax(ac[lo:hi]))
        if ac[lag] / ac[0] > 0.3:
            f0.append(sr / lag)
    return float(np.median(f0))


def test_synthesis_is_non_silent_16k_float32():
    audio, sr = EspeakSynth("en-us", "f3").synthesize(SENTENCE)
    assert sr == 16000
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert 2.0 < len(audio) / sr < 10.0
    assert np.sqrt(np.mean(audio**2)) > 0.01
    assert np.abs(audio).max() <= 1.0


def test_length_grows_with_text():
    synth = EspeakSynth("en-us")
    short = synth.synthesize("Hello.")[0]
    longer = synth.synthesize("Hello. " + SENTENCE)[0]
    longest = synth.synthesize("Hello. " + SENTENCE + " " + SENTENCE)[0]
    assert len(short) < len(longer) < len(longest)
    assert len(longest) - len(longer) > 16000  # the sentence lasts more than a second


def test_rate_changes_duration():
    slow = EspeakSynth("en-us", rate=120).synthesize(SENTENCE)[0]
    fast = EspeakSynth("en-us", rate=250).synthesize(SENTENCE)[0]
    assert len(fast) < 0.75 * len(slow)


def test_female_and_male_voices_differ_in_f0():
    high = EspeakSynth("en-us", "f2", pitch=70).synthesize(SENTENCE)[0]
    low = EspeakSynth("en-us", "m3", pitch=25).synthesize(SENTENCE)[0]
    f0_high, f0_low = _median_f0(high), _median_f0(low)
    assert 140 < f0_high < 400 and 60 < f0_low < 160
    assert f0_high > 1.5 * f0_low


def test_accents_differ():
    # same variant and prosody, different language voices: different phones, different audio
    american = EspeakSynth("en-us", "m1").synthesize("I can't find the water bottle.")[0]
    scottish = EspeakSynth("en-gb-scotland", "m1").synthesize("I can't find the water bottle.")[0]
    n = min(len(american), len(scottish))
    assert len(american) != len(scottish) or not np.allclose(american[:n], scottish[:n])


def test_isolated_synthesis_is_bit_exact_whatever_ran_before():
    synth = EspeakSynth("en-gb-x-rp", "f5", rate=160, pitch=60, pitch_range=70)
    first = synth.synthesize(SENTENCE)[0]
    EspeakSynth("en-029", "m7").synthesize("Something else entirely, with a question?")
    again = synth.synthesize(SENTENCE)[0]
    assert np.array_equal(first, again)


def test_in_process_synthesis_matches_in_length():
    isolated = EspeakSynth("en-us", "f1").synthesize(SENTENCE)[0]
    in_process = EspeakSynth("en-us", "f1", isolated=False).synthesize(SENTENCE)[0]
    assert abs(len(isolated) - len(in_process)) < 0.02 * len(isolated)


def test_empty_text_gives_little_or_no_audio():
    audio, sr = EspeakSynth().synthesize("")
    assert sr == 16000 and len(audio) < 1600


def test_voice_and_variant_listings():
    variants = list_variants()
    assert {f"f{i}" for i in range(1, 6)} <= set(variants)
    assert {f"m{i}" for i in range(1, 8)} <= set(variants)
    assert variants["f3"] == "female" and variants["m3"] == "male"
    voices = list_english_voices()
    for code in ("en-us", "en", "en-gb-scotland", "en-gb-x-rp", "en-029"):
        assert code in voices
    assert espeak.engine_version().startswith("1.")


def test_bad_voices_and_parameters_are_clear_errors():
    with pytest.raises(DataError, match="no voice 'xx-nowhere'"):
        EspeakSynth("xx-nowhere").synthesize("hi")
    with pytest.raises(DataError, match="variant 'nobody'"):
        EspeakSynth("en-us", "nobody")
    with pytest.raises(DataError, match="rate"):
        EspeakSynth(rate=5)
    with pytest.raises(DataError, match="variant separately"):
        EspeakSynth("en-us+f3")
    assert EspeakSynth("en-gb", "m2").name == "en+m2"  # espeak-ng knows British English as "en"


def test_library_that_cannot_load_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(
        espeak, "library_paths", lambda: (str(tmp_path / "libespeak-ng.so"), str(tmp_path))
    )
    with pytest.raises(EspeakError, match="cannot load libespeak-ng"):
        espeak._Engine()
