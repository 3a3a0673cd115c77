"""`GroupSpec`: one consumer group of a run. How many consumer processes, their consume threads, what the listener
does with each message (a processing time, a share of messages that block a consume thread for `hold_s` the way an
HTTP call without a timeout does, a share answered RECONSUME_LATER the first time) and where a new group starts.

A pydantic model that round-trips through JSON (`GroupSpec.model_validate_json(g.model_dump_json())`); the harness's
scenario schema embeds it (`consumers: {drain: 30s, groups: [...]}`). `parse_group(data, source)` raises
`SpecError` with one line naming the source, key and allowed values. Importing this module has no side effects.

Example::

    GroupSpec(name="orders", consumers=2, threads=20, processing=5, stuck=StuckSpec(share=0.01, hold_s=60))
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from loads.spec import SpecError, parse_model

GROUP_PATTERN = r"^[A-Za-z0-9_-]{1,120}$"
"""RocketMQ allows `^[%|a-zA-Z0-9_-]+$` up to 255 characters (`Validators.checkGroup`); a group here also names its
processes (`<group>.c<i>`, Parquet part files), so `%` and `|` are left out and the length leaves room."""
RESERVED_GROUPS = ("DEFAULT_CONSUMER", "CID_RMQ_SYS_TRANS", "TOOLS_CONSUMER", "FILTERSRV_CONSUMER",
                   "__MONITOR_CONSUMER", "CLIENT_INNER_PRODUCER", "SELF_TEST_C_GROUP", "CID_ONSAPI_OWNER",
                   "CID_ONSAPI_PERMISSION", "CID_ONSAPI_PULL", "CID_RMQ_SYS_")
"""`MixAll`'s system consumer groups (and the `CID_RMQ_SYS_` prefix): `DefaultMQPushConsumer.checkConfig` refuses
DEFAULT_CONSUMER; the others belong to the broker and tools."""
MAX_CONSUMERS = 32
MAX_THREADS = 1000  # DefaultMQPushConsumer.checkConfig: consumeThreadMin/Max in [1, 1000]
MAX_PROCESSING_MS = 600_000
MAX_HOLD_S = 86_400
CONSUME_FROM = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET")


class StuckSpec(BaseModel):
    """A share of messages whose listener call blocks a consume thread for `hold_s` seconds (until released)."""

    model_config = ConfigDict(extra="forbid")

    share: float = Field(ge=0, le=1, description="share of messages that block, 0..1")
    hold_s: float = Field(gt=0, le=MAX_HOLD_S, description="how long such a message holds its consume thread")


class GroupSpec(BaseModel):
    """One consumer group: `consumers` processes (`<name>.c0` ...), each one push consumer of the run's topic."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=GROUP_PATTERN, description="consumer group name")
    consumers: int = Field(default=1, ge=1, le=MAX_CONSUMERS, description="consumer processes (instances)")
    threads: int = Field(default=20, ge=1, le=MAX_THREADS, description="consume threads per process "
                                                                      "(consumeThreadMin/Max)")
    processing: float = Field(default=0.0, ge=0, le=MAX_PROCESSING_MS, description="listener time per message, ms")
    stuck: StuckSpec | None = Field(default=None, description="a share of messages that block a consume thread")
    consume_from: Literal["CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET"] = "CONSUME_FROM_LAST_OFFSET"
    pull_threshold_for_queue: int = Field(default=1000, ge=1, le=65535, description="pullThresholdForQueue: "
                                          "messages cached per queue before the client stops pulling")
    poll_name_server_interval: int = Field(default=30_000, ge=100, le=600_000, description="pollNameServerInterval "
                                           "(ms): how often the client refreshes its routes from the name server")
    reconsume_share: float | None = Field(default=None, ge=0, le=1, description="share of messages answered "
                                                                                 "RECONSUME_LATER the first time")
    keep_up: bool = Field(default=False, description="the group must keep up with the load: a phase without a "
                          "fault on the group in which its clients held pulls back (flow control: more than "
                          "pull_threshold_for_queue messages cached in a queue, or too wide a span) was not "
                          "delivered, and every expectation over it is unknown")
    profile: Literal["java-4.9.1", "java-4.9.3", "java-5.3"] | None = Field(
        default=None, description="client version profile; default: the fleet's")

    @model_validator(mode="after")
    def _not_reserved(self) -> GroupSpec:
        if self.name in RESERVED_GROUPS or self.name.startswith("CID_RMQ_SYS_"):
            raise ValueError(f"name: {self.name!r} is a RocketMQ system group; allowed: any other name matching "
                             f"{GROUP_PATTERN}")
        return self

    def worker(self, index: int, restart: int = 0) -> str:
        """The process name of instance `index`: `<group>.c<i>`, a restarted one `<group>.c<i>.r<n>`."""
        return f"{self.name}.c{index}" + (f".r{restart}" if restart else "")


def parse_group(data: Any, source: str = "consumer group") -> GroupSpec:
    """Validate a mapping as a `GroupSpec`; raises `SpecError` with one line."""
    if isinstance(data, GroupSpec):
        return data
    return parse_model(GroupSpec, data, source, "a consumer group")


def parse_groups(data: Any, source: str = "consumers.groups") -> list[GroupSpec]:
    """A list of groups with unique names; raises `SpecError` with one line."""
    if not isinstance(data, list) or not data:
        raise SpecError(f"{source}: a non-empty list of consumer groups, got {type(data).__name__}")
    groups = [parse_group(g, f"{source}.{i}") for i, g in enumerate(data)]
    names = [g.name for g in groups]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SpecError(f"{source}: group names must be unique, repeated: {', '.join(dupes)}")
    return groups
