"""How a corpus is anonymized (not what: none of these settings keys the cache): the runner
(local or Ray), its batch size and Ray resources, and the progress bar. One definition, read by
``sparc-eval anonymize`` and the card from the hparams keys of the same names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..hparams import bounded

RUNNERS = ("local", "ray")


@dataclass(frozen=True)
class RunnerOptions:
    runner: str = bounded("local", choices=RUNNERS)
    batch_size: int = bounded(1, minimum=1)
    num_workers: Optional[int] = None  # Ray actors (None: cluster CPUs / num_cpus)
    num_cpus: float = bounded(1.0, above=0.0)  # CPUs per Ray actor
    num_gpus: float = bounded(0.0, minimum=0.0)  # GPUs per Ray actor (fractions allowed)
    ray_address: Optional[str] = None  # None: a local Ray instance
    progress: bool = True

    def ray_options(self) -> dict:
        """The Ray runner's resources, as the runner hands them to Ray."""
        return {
            "num_workers": self.num_workers,
            "num_gpus": self.num_gpus,
            "num_cpus": self.num_cpus,
            "ray_address": self.ray_address,
        }
