"""Without the ``whisper`` / ``nemo`` extras (the default install), the paper's STT-TTS backends
fail with a DataError that names the extra to install, before any model file is read. Where the
extras are installed (.venv-paper), the packages are hidden so the same path runs."""

import importlib.util
import sys

import pytest

from anonymizers.stt_tts import SttTts
from sparc_eval.errors import DataError
from sparc_eval.speech.asr import OpenAIWhisperASR
from sparc_eval.speech.tts import NemoTTS


@pytest.fixture
def without_paper_extras(monkeypatch):
    """As if openai-whisper and nemo_toolkit were not installed (they are not in .venv)."""
    hidden = ("whisper", "nemo")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: (
            None if name.split(".")[0] in hidden else real_find_spec(name, *a, **k)
        ),
    )
    for name in hidden:  # None in sys.modules makes `import name` raise ImportError
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture
def checkpoint_files(tmp_path):
    """Existing files: the extra check must come before any attempt to read them."""
    paths = {name: tmp_path / name for name in ("small.pt", "fastpitch.nemo", "hifigan.nemo")}
    for path in paths.values():
        path.write_bytes(b"never read")
    return paths


def test_openai_whisper_without_its_extra_names_it(without_paper_extras, checkpoint_files):
    with pytest.raises(DataError, match=r"openai-whisper.*pip install 'sparc-eval\[whisper\]'"):
        OpenAIWhisperASR(checkpoint_files["small.pt"])


def test_nemo_tts_without_its_extra_names_it(without_paper_extras, checkpoint_files):
    with pytest.raises(DataError, match=r"nemo_toolkit.*pip install 'sparc-eval\[nemo\]'"):
        NemoTTS(checkpoint_files["fastpitch.nemo"], checkpoint_files["hifigan.nemo"])


def test_stt_tts_with_the_paper_backends_names_the_missing_extra(
    without_paper_extras, checkpoint_files
):
    with pytest.raises(DataError, match=r"sparc-eval\[whisper\]"):
        SttTts(
            asr="openai-whisper",
            tts="nemo",
            asr_options={"checkpoint": str(checkpoint_files["small.pt"])},
        )


def test_missing_checkpoints_are_named_before_the_extra(tmp_path):
    with pytest.raises(DataError, match=r"small.pt does not exist.*'checkpoint' option"):
        OpenAIWhisperASR(tmp_path / "small.pt")
    with pytest.raises(DataError, match=r"fastpitch.nemo does not exist.*'fastpitch' option"):
        NemoTTS(tmp_path / "fastpitch.nemo", tmp_path / "hifigan.nemo")
