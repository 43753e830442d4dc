"""The site build's stage timings."""

from __future__ import annotations

import time


class Clock:
    """Adds the seconds since its last call to ``stages[name]`` (the stages of :class:`SiteInfo`)."""

    def __init__(self, stages: dict[str, float]) -> None:
        self.stages = stages
        self.last = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = round(self.stages.get(name, 0.0) + now - self.last, 3)
        self.last = now
