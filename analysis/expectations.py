"""Scenario expectations (architecture §6): the pydantic model the harness's scenario schema embeds.

One expectation is one measured metric over an optional filter, with bounds. The evaluation against the
computed aggregates lives in `analysis.verdict` (Spark); this module imports only pydantic and our contract.

Example::

    Expectation.model_validate({"phase": "healthy", "outcome": "SEND_OK", "metric": "share", "min": 0.99})
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from analysis.contract import OUTCOMES
from analysis.errors import list_at

COUNT_METRICS = ("count", "share", "rate")
LATENCY_METRICS = ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p999_ms", "latency_max_ms")
FAULT_METRICS = ("fault_to_first_error_s", "recovery_s")
LOSS_METRICS = ("lost", "not_on_slave", "duplicated", "recovered", "unexpected", "unseen_master", "unseen_slave")
"""`unseen_master` / `unseen_slave`: acknowledged sends placed where that node's read-back could not read
(`readback/queues.json`): judged neither lost nor not_on_slave."""
CONSUME_COUNT_METRICS = ("consume_count", "consume_rate", "consume_from_slave")
"""`consume_from_slave`: deliveries whose pull went to a slave (broker_id != 0)."""
CONSUME_LATENCY_METRICS = ("consume_latency_p50_ms", "consume_latency_p90_ms", "consume_latency_p99_ms",
                           "consume_latency_p999_ms", "consume_latency_max_ms")
CONSUMER_LOSS_METRICS = ("consumer_lost", "consumer_duplicated", "consumer_reordered")
LAG_METRICS = ("lag_max", "lag_end", "offset_stall_s", "offset_rewind")
"""`offset_rewind`: the most the group's committed offsets (per queue, summed) stood below their highest so far
in any second, e.g. after a failover's stale copy (analysis.consume_measures)."""
PAGECACHE_METRICS = ("pagecache_put_p99_ms",)
FAILOVER_METRICS = ("failover_election_s", "failover_route_s", "failover_first_ok_s", "failover_unavailable_s")
"""Controller mode: from the master's death (the fault on `master`) to the election, the new route, the first
SEND_OK; and the producers' window without one (analysis.failover)."""
SEARCH_METRICS = ("sustainable_rate",)
"""A phase's sustainable-rate search (scenario `search:`): the highest achieved rate held for `hold` consecutive
steps within its bounds, sends/s (analysis.search)."""
GROUP_METRICS = ("group_share", "group_leave_s")
"""Broker groups (filter `broker`, a group name): `group_share`, the share of the window's sends that ended on the
group (analysis.measures); `group_leave_s`, the seconds from a fault's verify until the group's share of the sends
per second stays at or below `below` for the rest of the fault's window (analysis.group_leave)."""
NODE_METRICS = ("nodes_not_back",)
"""`nodes_not_back`: the nodes a fault's revert started again that exited while starting or were not serving within
the revert's bound (events.jsonl: a revert `failed` with `node_not_back`; analysis.nodes_back)."""
CONSUMER_METRICS = CONSUME_COUNT_METRICS + CONSUME_LATENCY_METRICS + CONSUMER_LOSS_METRICS + LAG_METRICS
"""Measured over `consumes/` and `metrics/lag/` (analysis.consume_measures); unknown in a run without them."""
METRICS: tuple[str, ...] = (COUNT_METRICS + LATENCY_METRICS + FAULT_METRICS + LOSS_METRICS + CONSUMER_METRICS
                            + PAGECACHE_METRICS + FAILOVER_METRICS + SEARCH_METRICS + GROUP_METRICS + NODE_METRICS)
SEND_BASES = ("intended", "actual")
CONSUME_BASES = ("born", "stored")
"""End-to-end latency of a delivery: delivered_ns minus the message's born time (producer) or store time (broker)."""
BASES = SEND_BASES + CONSUME_BASES

LATENCY_QUANTILE = {
    "latency_p50_ms": 0.5,
    "latency_p90_ms": 0.9,
    "latency_p99_ms": 0.99,
    "latency_p999_ms": 0.999,
    "latency_max_ms": 1.0,
}
LATENCY_QUANTILE.update({"consume_" + k: v for k, v in list(LATENCY_QUANTILE.items())})

TRANSITIONS = ("exclude", "include", "only")
"""The `transitions` filter: the sends started while a fault was being applied and verified or reverted (the
transition slices of analysis.transitions) left out, counted with the rest, or the only ones counted. Default:
`exclude` with a `phase` (a phase's figures are the time its faults were in effect), `include` without (the whole
run holds every send)."""
ROW_FILTERS = ("phase", "client", "broker", "outcome", "response_code", "remark_contains", "after_s", "before_s",
               "transitions")
OUTCOME_FILTERS = ("outcome", "response_code", "remark_contains")
ALLOWED_FILTERS: dict[str, tuple[str, ...]] = {
    **{m: ROW_FILTERS for m in COUNT_METRICS + LATENCY_METRICS},
    "fault_to_first_error_s": ("fault", "client", "outcome", "response_code", "remark_contains"),
    "recovery_s": ("fault", "client"),
    **{m: ROW_FILTERS for m in ("lost", "not_on_slave", "duplicated", "recovered", "unseen_master", "unseen_slave")},
    "unexpected": (),
    **{m: ("group", "phase") for m in CONSUME_COUNT_METRICS + CONSUME_LATENCY_METRICS + LAG_METRICS},
    **{m: ("group",) for m in CONSUMER_LOSS_METRICS},
    "pagecache_put_p99_ms": ("node", "phase"),
    **{m: ("fault",) for m in FAILOVER_METRICS},
    "sustainable_rate": ("phase",),
    "group_share": ("phase", "client", "broker", "after_s", "before_s", "transitions"),
    "group_leave_s": ("fault", "client", "broker"),
    "nodes_not_back": (),
}
FILTER_KEYS = ROW_FILTERS + ("fault", "group", "node")
WORD_KEYS: dict[str, tuple[str, ...]] = {"metric": METRICS, "basis": BASES, "outcome": OUTCOMES,
                                         "transitions": TRANSITIONS}
"""Keys whose value is one of a list of words, with their words."""

Metric = Literal[
    "count", "share", "rate",
    "latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_p999_ms", "latency_max_ms",
    "fault_to_first_error_s", "recovery_s",
    "lost", "not_on_slave", "duplicated", "recovered", "unexpected", "unseen_master", "unseen_slave",
    "consume_count", "consume_rate", "consume_from_slave",
    "consume_latency_p50_ms", "consume_latency_p90_ms", "consume_latency_p99_ms", "consume_latency_p999_ms",
    "consume_latency_max_ms",
    "consumer_lost", "consumer_duplicated", "consumer_reordered", "lag_max", "lag_end", "offset_stall_s",
    "offset_rewind",
    "pagecache_put_p99_ms",
    "failover_election_s", "failover_route_s", "failover_first_ok_s", "failover_unavailable_s",
    "sustainable_rate",
    "group_share", "group_leave_s",
    "nodes_not_back",
]


class Expectation(BaseModel):
    """One bound on one metric. `min`/`max` are inclusive; at least one is given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="label in the verdict and junit; generated when absent")
    phase: str | None = Field(default=None, description="rows of this phase (scenario phase name)")
    client: str | None = Field(default=None, description="rows of this load client (producer group)")
    broker: str | None = Field(default=None, description="rows whose send ended on this broker group (its broker "
                                                         "name, e.g. broker-a: the request row's `broker`)")
    outcome: str | None = Field(default=None, description="rows with this outcome word")
    response_code: int | None = Field(default=None, description="rows with this broker response code")
    remark_contains: str | None = Field(default=None, description="rows whose remark contains this text")
    after_s: float | None = Field(default=None, ge=0, description="rows started at least this long after the "
                                                                   "phase start (run start without phase)")
    before_s: float | None = Field(default=None, gt=0, description="rows started before this many seconds")
    transitions: Literal["exclude", "include", "only"] | None = Field(
        default=None, description="rows started while a fault was being applied/verified or reverted: exclude "
                                  "(default with a phase), include (default without), only")
    fault: str | None = Field(default=None, description="fault id (events.jsonl fault_id) for fault metrics")
    group: str | None = Field(default=None, description="consumer group (scenario consumers:) for consumer metrics")
    node: str | None = Field(default=None, description="broker node (master, slave) for pagecache_put_p99_ms")
    metric: Metric
    basis: Literal["intended", "actual", "born", "stored"] = Field(
        default="intended", description="send latency from the intended start (open model) or actual; consume "
                                        "latency (default born) from the message's born or store time")
    below: float | None = Field(default=None, ge=0, le=1, description="group_leave_s: the bound the group's share "
                                                                      "of sends per second must stay at or below")
    min: float | None = None
    max: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"an expectation is a mapping of keys to values, got {type(data).__name__}")
        unknown = [k for k in data if k not in cls.model_fields]
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; allowed keys: {', '.join(cls.model_fields)}")
        return data

    @field_validator(*WORD_KEYS, mode="before")
    @classmethod
    def _known_word(cls, v: Any, info: ValidationInfo) -> Any:
        words = WORD_KEYS[info.field_name]
        if v not in words and not (v is None and info.field_name in ("outcome", "transitions")):  # None: no filter
            raise ValueError(f"{info.field_name} {v!r} is not one of: {', '.join(words)}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Expectation:
        if self.min is None and self.max is None:
            raise ValueError(f"expectation on {self.metric} needs min or max (or both)")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        allowed = ALLOWED_FILTERS[self.metric]
        for key in FILTER_KEYS:
            if getattr(self, key) is not None and key not in allowed:
                names = ", ".join(allowed) if allowed else "none"
                raise ValueError(f"key {key!r} does not apply to metric {self.metric}; its filters: {names}")
        if self.metric in FAULT_METRICS + ("group_leave_s",) and self.fault is None:
            raise ValueError(f"metric {self.metric} needs key 'fault' (a fault id of the scenario)")
        if self.metric in GROUP_METRICS and self.broker is None:
            raise ValueError(f"metric {self.metric} needs key 'broker' (a broker group of the scenario, e.g. broker-a)")
        if self.metric == "group_leave_s" and self.below is None:
            raise ValueError("metric group_leave_s needs key 'below' (the share of sends per second the group must "
                             "stay at or below, 0..1)")
        if self.metric != "group_leave_s" and self.below is not None:
            raise ValueError("key 'below' applies only to metric group_leave_s")
        if self.metric == "share" and not any(getattr(self, k) is not None for k in OUTCOME_FILTERS):
            raise ValueError("metric share needs one of keys outcome, response_code, remark_contains "
                             "(the share of those rows among the rows of the other filters)")
        if "basis" in self.model_fields_set and self.metric not in LATENCY_METRICS + CONSUME_LATENCY_METRICS:
            raise ValueError(f"key 'basis' applies only to metrics "
                             f"{', '.join(LATENCY_METRICS + CONSUME_LATENCY_METRICS)}")
        if self.metric in CONSUME_LATENCY_METRICS:
            if "basis" not in self.model_fields_set:
                object.__setattr__(self, "basis", "born")
            elif self.basis not in CONSUME_BASES:
                raise ValueError(f"basis {self.basis!r} does not apply to metric {self.metric}; allowed: "
                                 f"{', '.join(CONSUME_BASES)}")
        elif self.metric in LATENCY_METRICS and self.basis not in SEND_BASES:
            raise ValueError(f"basis {self.basis!r} does not apply to metric {self.metric}; allowed: "
                             f"{', '.join(SEND_BASES)}")
        if self.after_s is not None and self.before_s is not None and self.before_s <= self.after_s:
            raise ValueError(f"before_s {self.before_s} must be above after_s {self.after_s}")
        return self

    @property
    def filters(self) -> dict[str, Any]:
        """The filter keys that are set, in a stable order."""
        return {k: getattr(self, k) for k in FILTER_KEYS if getattr(self, k) is not None}

    @property
    def transition_rows(self) -> str:
        """Which rows of the transition slices count: the `transitions` filter, else its default (`exclude` with
        a phase, `include` without)."""
        if self.transitions is not None:
            return self.transitions
        return "exclude" if self.phase is not None else "include"

    @property
    def limit(self) -> dict[str, float]:
        return {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}

    def label(self) -> str:
        """`name`, or a description built from the filters, metric and bounds."""
        if self.name:
            return self.name
        parts = [f"{k}={v}" for k, v in self.filters.items()]
        latency = self.metric in LATENCY_METRICS + CONSUME_LATENCY_METRICS
        metric = self.metric + (f"[{self.basis}]" if latency else f"[below={self.below:g}]" if self.below is not None
                                else "")
        bounds = " ".join(f"{k}={v:g}" for k, v in self.limit.items())
        return " ".join([*parts, metric, bounds])

    def holds(self, measured: float) -> bool:
        """Whether a measured value lies within the bounds (inclusive)."""
        return (self.min is None or measured >= self.min) and (self.max is None or measured <= self.max)


def parse_expectations(data: Any, source: str = "scenario.yaml", key: str = "expect") -> list[Expectation]:
    """Validate a scenario's `expect` list. Raises `ValueError` with one line naming file, key and allowed values."""
    out = []
    for i, item in enumerate(list_at(data, source, key, "expectations")):
        try:
            out.append(Expectation.model_validate(item))
        except ValidationError as err:
            raise ValueError(format_error(err, source, f"{key}[{i}]")) from None
    return unique_labels(out)


def format_error(err: ValidationError, source: str, prefix: str) -> str:
    """The first validation error of `err` as `file: key.path: message` on one line."""
    e = err.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in (prefix, *e["loc"]) if p != "")
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "literal_error" and e["loc"]:
        field = str(e["loc"][-1])
        allowed = {"metric": METRICS, "basis": BASES}.get(field)
        if allowed:
            msg = f"{e.get('input')!r} is not one of: {', '.join(allowed)}"
    return f"{source}: {loc}: {msg}"


def unique_labels(expectations: Sequence[Expectation]) -> list[Expectation]:
    """Refuse two expectations with the same label: the verdict and junit name them by it."""
    seen: set[str] = set()
    for e in expectations:
        label = e.label()
        if label in seen:
            raise ValueError(f"two expectations are both named {label!r}; give one a distinct 'name'")
        seen.add(label)
    return list(expectations)


def metrics_needing_readback(expectations: Iterable[Expectation]) -> list[Expectation]:
    return [e for e in expectations if e.metric in LOSS_METRICS]
