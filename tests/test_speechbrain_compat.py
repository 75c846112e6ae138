"""SpeechBrain works with a real torchaudio, with a broken one (CUDA build beside CPU torch),
and with none; each case runs in a fresh interpreter so imports do not leak between them."""

import subprocess
import sys
import textwrap

import pytest

USE_SPEECHBRAIN = """
from sparc_eval.speechbrain_compat import import_speechbrain, torchaudio_status
import_speechbrain()
import torch
from speechbrain.lobes.features import Fbank
from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN
from speechbrain.utils.metric_stats import EER
feats = Fbank(n_mels=40)(torch.randn(2, 8000))
emb = ECAPA_TDNN(40, channels=[32, 32, 32, 32, 96], lin_neurons=16)(feats)
assert emb.shape == (2, 1, 16), emb.shape
eer, _ = EER(torch.tensor([0.9, 0.8]), torch.tensor([0.1, 0.2]))
assert eer == 0.0
print("STATUS", torchaudio_status())
"""


def _run(code, env_extra=None, tmp_path=None):
    import os

    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )


@pytest.mark.slow("imports torch and SpeechBrain in a fresh interpreter: about 6 s")
def test_working_torchaudio_is_used_as_is(tmp_path):
    fake = tmp_path / "site" / "torchaudio"
    for sub in ("", "transforms", "functional", "compliance"):
        (fake / sub).mkdir(parents=True, exist_ok=True)
        (fake / sub / "__init__.py").write_text("")
    (fake / "__init__.py").write_text(
        "__version__ = '2.99.0'\ndef list_audio_backends():\n    return ['soundfile']\n"
    )
    (fake / "compliance" / "kaldi.py").write_text("")
    import os

    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    out = _run(
        USE_SPEECHBRAIN
        + "import torchaudio; assert torchaudio.__file__.startswith(%r)\n" % str(fake),
        {"PYTHONPATH": path},
    )
    assert out.returncode == 0, out.stderr
    assert "STATUS torchaudio 2.99.0" in out.stdout


@pytest.mark.slow("imports torch and SpeechBrain in two fresh interpreters: about 6 s")
def test_broken_or_missing_torchaudio_gets_the_stand_in():
    blocker = """
    import sys
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name == "torchaudio" or name.startswith("torchaudio."):
                raise ModuleNotFoundError("No module named 'torchaudio'")
    sys.meta_path.insert(0, Block())
    """
    out = _run(textwrap.dedent(blocker) + USE_SPEECHBRAIN)
    assert out.returncode == 0, out.stderr
    assert "STATUS stand-in (ModuleNotFoundError" in out.stdout


def test_stand_in_fails_clearly_when_used():
    code = """
    import sys
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.startswith("torchaudio"):
                raise OSError("libc10_cuda.so: cannot open shared object file")
    sys.meta_path.insert(0, Block())
    from sparc_eval.speechbrain_compat import ensure_torchaudio
    print(ensure_torchaudio())
    import torchaudio
    assert not hasattr(torchaudio, "list_audio_backends")
    try:
        torchaudio.load("x.wav")
    except AttributeError as err:
        print("ERROR", err)
    """
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert "stand-in (OSError: libc10_cuda.so" in out.stdout
    assert "ERROR torchaudio.load needs a working torchaudio" in out.stdout
