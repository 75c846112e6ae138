"""torchrun DDP the SpeechBrain way (issue 15): 2 CPU processes with gloo train one attacker, the
main process alone prepares the data and features and writes one results.json; a second run resumes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow("torchrun starts two training processes twice: about 50 s")

REPO = Path(__file__).resolve().parents[1]
TINY = [
    "--channels=[32,32,32,32,96]",
    "--emb_dim=32",
    "--number_of_epochs=2",
    "--batch_size=16",
    "--n_boot=50",
    "--progress=False",
    "--num_threads=1",
]


def _torchrun(demo_dir, out, *extra):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(REPO / "recipes/train_attacker.py"),
        str(REPO / "hparams/phones.yaml"),
        "--distributed_backend=gloo",
        f"--data_folder={demo_dir}",
        f"--output_folder={out}",
        f"--cache_folder={out / 'cache'}",
        *TINY,
        *extra,
    ]
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
    checkpoints = sorted(p.name for p in (tmp_path / "save").glob("CKPT*"))
    log = (tmp_path / "train_log.txt").read_text()
    assert checkpoints and log.count("epoch:") == 2
    again = _torchrun(demo_dir, tmp_path)  # resumes from the checkpoints: nothing left to train
    assert again.returncode == 0, again.stderr[-3000:]
    redo = json.loads((tmp_path / "results.json").read_text())
    assert redo["overall"]["eer"] == doc["overall"]["eer"]
    # no epoch ran again: the same checkpoints and training log (not a timing, which load moves)
    assert sorted(p.name for p in (tmp_path / "save").glob("CKPT*")) == checkpoints
    assert (tmp_path / "train_log.txt").read_text() == log


FAILING_ATTACKER = '''
import os

import torch.distributed as dist

from sparc_eval.attack import Needs


class FailsOnRankOne:
    """Rank 1 fails in fit(); rank 0 waits for it at a barrier, which would hang without torchrun."""
    name = "fails_on_rank_one"
    needs = Needs(training=True)

    def fit(self, train):
        if os.environ.get("RANK") == "1":
            raise RuntimeError("rank 1 failed on purpose")
        dist.barrier()

    def score(self, plan):
        raise AssertionError("never reached")

    def describe(self):
        return {}

    def deviations(self, plan):
        return {}
'''


def test_a_failing_rank_stops_the_run_with_its_error(demo_dir, tmp_path):
    (tmp_path / "failing_attacker.py").write_text(FAILING_ATTACKER)
    hparams = tmp_path / "failing.yaml"
    hparams.write_text(
        f"output_folder: {tmp_path / 'out'}\ncache_folder: {tmp_path / 'cache'}\n"
        f"data_folder: {demo_dir}\nattacker: !new:failing_attacker.FailsOnRankOne\n"
    )
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(REPO / "recipes/train_attacker.py"),
        str(hparams),
        "--distributed_backend=gloo",
    ]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, cwd=REPO, timeout=300, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a failing rank left the other hung at the barrier (no exit within 300 s)")
    assert proc.returncode != 0 and "rank 1 failed on purpose" in proc.stderr
