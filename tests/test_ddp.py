"""torchrun DDP the SpeechBrain way (issue 15): 2 CPU processes with gloo train one attacker, the
main process alone prepares the data and features and writes one results.json; a second run resumes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TINY = ["--channels=[32,32,32,32,96]", "--emb_dim=32", "--number_of_epochs=2", "--batch_size=16",
        "--n_boot=50", "--progress=False", "--num_threads=1"]


def _torchrun(demo_dir, out, *extra):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               str(REPO / "recipes/train_attacker.py"), str(REPO / "hparams/phones.yaml"), "--distributed_backend=gloo",
               f"--data_folder={demo_dir}", f"--output_folder={out}", f"--cache_folder={out / 'cache'}", *TINY, *extra]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=900)


@pytest.fixture(scope="module")
def demo_dir(demo_reading_corpus):
    return Path(demo_reading_corpus.name).parent


def test_two_cpu_processes_train_one_attacker(demo_dir, tmp_path):
    proc = _torchrun(demo_dir, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = [line for line in proc.stdout.splitlines() if line.endswith("results.json")]
    assert printed == [str(tmp_path / "results.json")]  # the main process alone writes and prints
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["overall"]["n_target"] == 240 and 0.0 < doc["overall"]["eer"] < 0.5
    assert any((tmp_path / "save").glob("CKPT*"))
    again = _torchrun(demo_dir, tmp_path)  # resumes from the checkpoints: nothing left to train
    assert again.returncode == 0, again.stderr[-3000:]
    redo = json.loads((tmp_path / "results.json").read_text())
    assert redo["overall"]["eer"] == doc["overall"]["eer"] and redo["run"]["timings_s"]["training"] < 5
