"""A phase's `search:` section: the sustainable-rate search. While the phase runs the open-model rate moves step by
step, OpenMessaging Benchmark's RateController being the anchor (start rate; within bounds the rate grows by
rate x factor and the factor doubles, up to `factor`; a bound exceeded halves the factor, down to 0.01, and cuts the
rate to what was achieved); the result is the highest rate held for `hold` consecutive steps within the bounds.

Example::

    phases:
      - name: throttled
        duration: 2m
        faults: [{kind: disk_throttle, target: master, params: {write_bps: 1048576}}]
        search: {start: 200, step: 5s, hold: 3, bounds: {p99_ms: 200, error_share: 0.01}}
"""
from __future__ import annotations

from pydantic import Field, model_validator

from harness.scenario.schema import Duration, Strict, at
from harness.scenario.workload import MAX_RATE

MIN_FACTOR = 0.01
"""OMB's MIN_RAMPING_FACTOR: the smallest step the factor is halved down to."""
DEFAULT_BACKLOG = 1000
"""OMB's PUBLISH_BACKLOG_LIMIT: sends a step's schedule owed and never started."""
MIN_STEP_S = 1.0
"""The load's figures reach the harness once a second: a shorter step would be judged on a stale second."""


class SearchBounds(Strict):
    """What a step must stay within. Each bound applies when given; `backlog` always does (OMB's default)."""

    p99_ms: float | None = Field(default=None, gt=0, description="99th percentile send latency from the intended "
                                                                  "start, ms")
    error_share: float | None = Field(default=None, ge=0, le=1, description="sends whose outcome is not SEND_OK")
    backlog: int = Field(default=DEFAULT_BACKLOG, ge=0, description="sends the step's schedule owed and did not "
                                                                    "start (OMB's publish backlog)")
    lag_max: int | None = Field(default=None, ge=0, description="the consumer groups' largest lag, messages "
                                                                "(OMB's receive backlog); needs consumers")


class SearchSpec(Strict):
    start: float | None = Field(default=None, gt=0, le=MAX_RATE,
                                description="sends/s of the first step (default: the phase's rate, else load.rate)")
    step: Duration = Field(default="10s", description="how long each rate is held before it is judged")
    hold: int = Field(default=3, ge=1, le=100, description="consecutive steps within bounds the result needs")
    factor: float = Field(default=1.0, gt=MIN_FACTOR, le=10, description="the largest ramping factor (OMB's "
                                                                         "MAX_RAMPING_FACTOR)")
    max_rate: float | None = Field(default=None, gt=0, le=MAX_RATE, description="never above this many sends/s")
    bounds: SearchBounds = SearchBounds()

    @model_validator(mode="after")
    def _sane(self) -> SearchSpec:
        if self.step < MIN_STEP_S:
            raise at(("step",), f"{self.step:g}s is shorter than the load's figures come ({MIN_STEP_S:g}s); "
                                f"allowed: {MIN_STEP_S:g}s or more")
        if self.start is not None and self.max_rate is not None and self.start > self.max_rate:
            raise at(("start",), f"{self.start:g} is above max_rate {self.max_rate:g}")
        return self
