"""The rule a soak judges a process's resident memory and open files by (issue 33). Shared by
tests/hardening/test_load.py and bench/soak.py.

The first quarter of the run (at least 5 s) is warm-up: connection pools fill, caches and the
allocator's arenas grow to their working size. After it, a process may rise by at most a bound
over its first sample after the warm-up; what a leak adds per call passes any fixed bound in a
long enough run, while a steady process keeps to it however long the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

RSS_GROWTH_BOUND_MIB = 20.0
OPEN_FILES_GROWTH_BOUND = 64
"""Open files may rise this much: the gateway's backend pools hold up to 40 connections and its
clients' sessions come and go; a descriptor leaked per call passes it within seconds."""
MIN_SAMPLES_AFTER_WARM_UP = 4


def warm_up_seconds(total_seconds: float) -> float:
    return max(5.0, total_seconds / 4)


@dataclass(frozen=True)
class AfterWarmUp:
    """A series of samples after the warm-up: its first, highest and last values."""

    first: float
    highest: float
    last: float
    samples: int

    @property
    def growth(self) -> float:
        return self.highest - self.first


def after_warm_up(series: Sequence[tuple[float, float]], warm_up: float) -> AfterWarmUp:
    """`series` holds (seconds since the start, value) pairs; fails with fewer than
    `MIN_SAMPLES_AFTER_WARM_UP` samples after `warm_up`, too few to judge by."""
    after = [value for at, value in series if at >= warm_up]
    if len(after) < MIN_SAMPLES_AFTER_WARM_UP:
        raise ValueError(f"{len(after)} samples after a warm-up of {warm_up:g} s: too few")
    return AfterWarmUp(after[0], max(after), after[-1], len(after))
