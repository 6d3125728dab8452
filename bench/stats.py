"""Summaries of latency samples, in milliseconds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Latency:
    n: int
    p50: float
    p99: float
    max: float

    def __str__(self) -> str:
        return f"p50 {self.p50:.2f} ms, p99 {self.p99:.2f} ms, max {self.max:.2f} ms (n={self.n})"


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not ordered:
        return float("nan")
    rank = max(1, round(fraction * len(ordered) + 0.499999))
    return ordered[min(rank, len(ordered)) - 1]


def latency(seconds: list[float]) -> Latency:
    ordered = sorted(s * 1000 for s in seconds)
    return Latency(len(ordered), percentile(ordered, 0.50), percentile(ordered, 0.99), ordered[-1] if ordered else 0)
