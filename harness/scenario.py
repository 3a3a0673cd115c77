"""The scenario file's schema: cluster, topic, load, warm-up, phases with their faults, read-back, expectations.

Each section is a strict pydantic model (unknown keys refused); `harness.scenarioload` reads a file, expands its
`matrix:` and turns any error into one line naming file, line, key and allowed values. The expectation items are
`analysis.expectations.Expectation`, embedded as is. The `consumers:` section
(`harness.consumergroups`) names consumer groups; a fault may target `consumer:<group>` or `<group>.c<i>`.
`Scenario.resolved()` is what a run writes to its
`scenario.yaml`: every default filled in, durations and sizes written with their units, and each phase's
`duration_s` (the figure the analysis reads).
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from analysis.expectations import Expectation
from harness.consumergroups import ConsumersSection, is_consumer_target, target_problem
from harness.schemabase import NAME_PATTERN, RUN_NAME_PATTERN, Duration, Size, Strict, at

NODE_NAMES = ("namesrv", "master", "slave")
BROKER_NODES = ("master", "slave")
PROGRAMS = ("emulator", "apache")
IMAGE_RE = re.compile(r"^[a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*"
                      r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$")
HA_RELAY_MODES = ("auto", "always", "never")
LOAD_MODELS = ("open", "closed")
REVERT_WHEN = ("phase_end", "after_readback")
WARMUP_PHASE = "warmup"
VERSION_RE = re.compile(r"^(4\.9\.[0-8]|5\.[0-3]\.\d{1,2})$")
VERSIONS_ALLOWED = "4.9.0 to 4.9.8, 5.0.x to 5.3.x (as a quoted string, e.g. \"4.9.1\")"
HEAP_RE = re.compile(r"^(\s*-Xm[sxn]\d+[kKmMgG]?)+\s*$")
TOPIC_RE = re.compile(r"^[%|a-zA-Z0-9_-]{1,127}$")
DEFAULT_HEAP = "-Xms128m -Xmx128m -Xmn64m"
DEFAULT_STORE_SIZE = "4GiB"
MIN_STORE_SIZE = 32 * 1024 * 1024
DEFAULT_TOPIC = "ChaosTopic"
MAX_RATE = 1_000_000.0
"""sends/s: far above what one machine can send; a larger figure is a typo."""
MAX_PHASES = 256
MAX_FAULTS_PER_PHASE = 16
MAX_CLIENTS = 64
MAX_EXPECTATIONS = 512
MAX_CONF_KEYS = 512

Name = Annotated[str, Field(pattern=NAME_PATTERN)]
RunName = Annotated[str, Field(pattern=RUN_NAME_PATTERN)]
ConfValue = str | int | float | bool
BrokerConf = Annotated[dict[str, ConfValue], Field(max_length=MAX_CONF_KEYS)]


def _default_workers() -> int:
    from loads.process import default_workers

    return default_workers()


class BrokerConfSection(Strict):
    """broker.conf overrides: `common` for both brokers, then `master` / `slave` for one of them (Apache key names)."""

    common: BrokerConf = {}
    master: BrokerConf = {}
    slave: BrokerConf = {}

    def for_node(self, node: str) -> dict[str, ConfValue]:
        return {**self.common, **getattr(self, node)}


class ClusterSpec(Strict):
    """What to stand up: backend, broker program and version, per-node broker.conf overrides, store size."""

    backend: Literal["local", "compose"] = Field(
        default="local", description="local: processes on this machine; compose: containers of compose/ (Docker)")
    image: str | None = Field(default=None, description="compose: the image of every node (default $ROCKETMQ_IMAGE, "
                                                        "else apache/rocketmq:<version>; '{version}' is replaced)")
    program: Literal["emulator", "apache"] = Field(
        default="emulator", description="emulator: the embedded cluster; apache: the distribution at $ROCKETMQ_HOME")
    version: str = Field(default="4.9.1", description="RocketMQ version (selects the emulator's version profile)")
    cluster_name: Name = "DefaultCluster"
    broker_name: Name = "broker-a"
    store_size: Size = Field(default=DEFAULT_STORE_SIZE, description="size of each broker's loop-mounted ext4 store")
    heap: str = Field(default=DEFAULT_HEAP, description="HEAP_OPTS of each broker (-Xms/-Xmx/-Xmn)")
    namesrv: BrokerConf = {}
    broker: BrokerConfSection = BrokerConfSection()
    allow_keys: list[str] = Field(default=[], description="broker.conf keys the version lacks, allowed on purpose")
    ha_relay: Literal["auto", "always", "never"] = Field(
        default="auto", description="put the HA relay on the slave's path to the master (auto: when ha_link is used)")
    ready_timeout: Duration = "60s"

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> Any:
        if isinstance(v, (int, float)):
            raise ValueError(f"{v!r} was read as a number; write the version as a quoted string; "
                             f"allowed: {VERSIONS_ALLOWED}")
        if not isinstance(v, str) or not VERSION_RE.match(v):
            raise ValueError(f"{v!r} is not a supported version; allowed: {VERSIONS_ALLOWED}")
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is not None and not IMAGE_RE.match(v.replace("{version}", "4.9.1")):
            raise ValueError(f"{v!r} is not an image reference; allowed: [registry/]name[:tag][@sha256:digest], "
                             "'{version}' standing for cluster.version")
        return v

    @model_validator(mode="after")
    def _backend(self) -> ClusterSpec:
        if self.backend == "compose" and self.program == "apache":
            raise at(("program",), "'apache' runs the distribution at $ROCKETMQ_HOME on this machine; with backend "
                                   "compose the image is the program (cluster.image); allowed: emulator, or backend local")
        if self.backend == "local" and self.image is not None:
            raise at(("image",), "applies to backend compose only; allowed: backend compose, or no image")
        return self

    @field_validator("heap")
    @classmethod
    def _heap(cls, v: str) -> str:
        if not HEAP_RE.match(v):
            raise ValueError(f"{v!r} is not a heap setting; allowed: -Xms<N>[kmg] -Xmx<N>[kmg] -Xmn<N>[kmg]")
        return " ".join(v.split())

    @field_validator("store_size")
    @classmethod
    def _store(cls, v: int) -> int:
        if v < MIN_STORE_SIZE:
            raise ValueError(f"{v} bytes is too small for an ext4 broker store; allowed: at least 32MiB")
        return v


class TopicSpec(Strict):
    name: str = DEFAULT_TOPIC
    queues: int = Field(default=4, ge=1, le=256)

    @field_validator("name")
    @classmethod
    def _topic(cls, v: str) -> str:
        if not TOPIC_RE.match(v):
            raise ValueError(f"{v!r} is not a valid topic name; allowed: letters, digits, '%', '|', '_', '-' "
                             "(at most 127)")
        return v


class ClientSpec(Strict):
    """One producer group of the load: its users share one producer, as threads share one Java producer."""

    name: Name
    model: Literal["open", "closed"] | None = Field(default=None, description="default: the load's model")
    users: int | None = Field(default=None, ge=1, le=10000, description="closed model: concurrent senders")
    rate: float | None = Field(default=None, gt=0, le=MAX_RATE, description="open model: this client's sends/s")
    share: float | None = Field(default=None, gt=0, le=1, description="open model: share of the load's rate")
    think_time: Duration = "0s"
    message_size: Size = "128B"
    timeout: Duration = "3s"
    profile: str = "java-4.9.1"
    retries: int | None = Field(default=None, ge=0, le=16, description="default: the profile's")
    serialize_type: Literal["JSON", "ROCKETMQ"] = Field(
        default="JSON", description="request header encoding (`rocketmq.serialize.type`); JSON is the Java default")
    tags: str | None = None
    instance: Name | None = Field(default=None, description="client instance (Java's instanceName): clients naming "
                                                            "the same one share its connections; default: its own")


class LoadSection(Strict):
    model: Literal["open", "closed"] = "closed"
    rate: float | None = Field(default=None, gt=0, le=MAX_RATE,
                               description="open model: total sends/s of the open clients")
    workers: int = Field(default_factory=lambda: _default_workers(), ge=0, le=16,
                         description="Locust worker processes (0: one local process); default: half the cores where "
                                     "there are 4 or more (the cluster runs on the same machine), else 0")
    clients: list[ClientSpec] = Field(default=[ClientSpec(name="flood", users=8)], min_length=1,
                                      max_length=MAX_CLIENTS)

    @model_validator(mode="after")
    def _models(self) -> LoadSection:
        names = [c.name for c in self.clients]
        for i, c in enumerate(self.clients):
            if names.index(c.name) != i:
                raise at(("clients", i, "name"), f"client name {c.name!r} is used twice")
            model = c.model or self.model
            if model == "closed" and (c.rate is not None or c.share is not None):
                raise at(("clients", i, "rate" if c.rate is not None else "share"),
                         "applies to the open model only; a closed-model client has users")
            if model == "closed" and c.users is None:
                raise at(("clients", i), "a closed-model client needs users")
            if model == "open" and c.rate is None and self.rate is None:
                raise at(("clients", i), "an open-model client needs a rate (its own, or load.rate)")
            shared = [o for o in self.clients[:i] if (o.instance or o.name) == (c.instance or c.name)]
            if shared and shared[0].profile != c.profile:
                raise at(("clients", i, "instance"), f"instance {c.instance or c.name!r} is shared with client "
                                                     f"{shared[0].name!r} of profile {shared[0].profile}; allowed: "
                                                     "one profile per instance, or another instance")
        if self.rate is not None and not any(self.model_of(c) == "open" for c in self.clients):
            raise at(("rate",), "load.rate applies to open-model clients and there are none")
        return self

    def model_of(self, client: ClientSpec) -> str:
        return client.model or self.model


class FaultSpec(Strict):
    """A fault applied at the start of its phase and reverted at its end (or after the read-back)."""

    id: Name | None = Field(default=None, description="name used by expectations (default: the kind)")
    kind: str
    target: str
    params: dict[str, Any] = {}
    revert: Literal["phase_end", "after_readback"] = Field(
        default="phase_end", description="after_readback keeps the fault while every queue is read back")

    @field_validator("target")
    @classmethod
    def _target(cls, v: str) -> str:
        if v not in NODE_NAMES and not is_consumer_target(v):
            raise ValueError(f"{v!r} is not a node of the cluster; allowed: {', '.join(NODE_NAMES)}, "
                             "consumer:<group>, <group>.c<index>")
        return v


class PhaseSpec(Strict):
    name: Name
    duration: Duration
    duration_s: float | None = Field(default=None, description="written by resolution; seconds of duration")
    rate: float | None = Field(default=None, gt=0, le=MAX_RATE,
                               description="open model: the load's total sends/s in this phase")
    faults: list[FaultSpec] = Field(default=[], max_length=MAX_FAULTS_PER_PHASE)
    expect: list[Expectation] = Field(default=[], max_length=MAX_EXPECTATIONS,
                                      description="expectations of this phase (phase filled in)")

    @model_validator(mode="before")
    @classmethod
    def _seconds(cls, data: Any) -> Any:
        if isinstance(data, dict) and "duration_s" in data:
            s = data["duration_s"]
            if isinstance(s, bool) or not isinstance(s, (int, float)):
                raise at(("duration_s",), f"expected a number of seconds, got {s!r}")
            if "duration" not in data:
                data = {**data, "duration": f"{round(s * 1000)}ms"}
        return data

    @model_validator(mode="after")
    def _agree(self) -> PhaseSpec:
        if self.duration <= 0:
            raise at(("duration",), "must be above 0s")
        if self.duration_s is not None and abs(self.duration_s - self.duration) > 1e-6:
            raise at(("duration_s",), f"{self.duration_s} disagrees with duration {self.duration:g}s")
        self.duration_s = self.duration
        return self


class ReadbackSpec(Strict):
    enabled: bool = True
    timeout: Duration = "120s"
    batch: int = Field(default=32, ge=1, le=1024, description="messages per pull request")


class Scenario(Strict):
    name: RunName
    description: str = ""
    variant: dict[str, str] = Field(default={}, description="matrix axes and the values of this run")
    cluster: ClusterSpec = ClusterSpec()
    topic: TopicSpec = TopicSpec()
    load: LoadSection = LoadSection()
    warmup: Duration = "5s"
    phases: list[PhaseSpec] = Field(min_length=1, max_length=MAX_PHASES)
    readback: ReadbackSpec = ReadbackSpec()
    consumers: ConsumersSection = ConsumersSection()
    expect: list[Expectation] = Field(default=[], max_length=MAX_EXPECTATIONS)
    _shift: int = PrivateAttr(default=0)

    def source_phase(self, index: int) -> int:
        """Index in the file's `phases` list of the resolved phase `index` (the warm-up phase is not in the file)."""
        return index - self._shift

    @model_validator(mode="after")
    def _resolve(self) -> Scenario:
        """Warm-up becomes the first phase; fault ids are filled in; phase expectations join the top-level list;
        every name an expectation or a phase uses must exist."""
        names = [p.name for p in self.phases]
        for i, name in enumerate(names):
            if names.index(name) != i:
                raise at(("phases", i, "name"), f"phase name {name!r} is used twice")
        if self.warmup > 0:
            if WARMUP_PHASE in names:
                raise at(("phases", names.index(WARMUP_PHASE), "name"),
                         f"{WARMUP_PHASE!r} is the warm-up's phase name; rename this phase or set warmup: 0s")
            self.phases.insert(0, PhaseSpec(name=WARMUP_PHASE, duration=f"{round(self.warmup * 1000)}ms"))
            self.warmup = 0.0
            shift = 1
        else:
            shift = 0
        self._shift = shift
        self._fill_fault_ids(shift)
        self._check_consumer_targets(shift)
        self._gather_expectations(shift)
        return self

    def _fill_fault_ids(self, shift: int) -> None:
        kinds = [f.kind for _, f in self.faults]
        seen: dict[str, tuple[int, int, str]] = {}
        for pi, phase in enumerate(self.phases):
            for fi, f in enumerate(phase.faults):
                if f.id is None:
                    same = sum(1 for k in seen.values() if k[2] == f.kind)
                    f.id = f.kind if kinds.count(f.kind) == 1 else f"{f.kind}-{same + 1}"
                if f.id in seen:
                    raise at(("phases", pi - shift, "faults", fi, "id"), f"fault id {f.id!r} is used twice")
                seen[f.id] = (pi, fi, f.kind)

    def _check_consumer_targets(self, shift: int) -> None:
        for pi, phase in enumerate(self.phases):
            for fi, f in enumerate(phase.faults):
                if is_consumer_target(f.target):
                    problem = target_problem(f.target, self.consumers)
                    if problem:
                        raise at(("phases", pi - shift, "faults", fi, "target"), problem)

    def _gather_expectations(self, shift: int) -> None:
        phases = [p.name for p in self.phases]
        clients = [c.name for c in self.load.clients]
        faults = [f.id for _, f in self.faults]
        groups = [g.name for g in self.consumers.groups]
        moved: list[tuple[tuple[str | int, ...], Expectation]] = [(("expect", i), e) for i, e in enumerate(self.expect)]
        for pi, phase in enumerate(self.phases):
            for ei, e in enumerate(phase.expect):
                path = ("phases", pi - shift, "expect", ei)
                if e.phase not in (None, phase.name):
                    raise at(path + ("phase",), f"{e.phase!r} differs from the phase it is written in ({phase.name!r})")
                moved.append((path, e.model_copy(update={"phase": phase.name})))
            phase.expect = []
        for path, e in moved:
            for key, known in (("phase", phases), ("client", clients), ("fault", faults), ("group", groups)):
                value = getattr(e, key, None)
                if value is not None and value not in known:
                    raise at(path + (key,), f"{value!r} is not a {key} of this scenario; allowed: "
                                            f"{', '.join(map(str, known)) or 'none'}")
        labels: dict[str, tuple[str | int, ...]] = {}
        for path, e in moved:
            if e.label() in labels:
                raise at(path, f"two expectations are both named {e.label()!r}; give one a distinct 'name'")
            labels[e.label()] = path
        self.expect = [e for _, e in moved]

    @property
    def faults(self) -> list[tuple[int, FaultSpec]]:
        """Every fault with the index of its phase."""
        return [(i, f) for i, p in enumerate(self.phases) for f in p.faults]

    @property
    def total_s(self) -> float:
        return self.warmup + sum(p.duration for p in self.phases)

    def resolved(self) -> dict[str, Any]:
        """The scenario as a run records it: defaults filled in, warm-up as the first phase, phase expectations
        moved to the top-level list (with their phase), `matrix` replaced by `variant`."""
        data = self.model_dump(mode="json", exclude_none=True, exclude={"expect"})
        if not self.consumers.groups:
            data.pop("consumers")  # a scenario without consumers resolves as it did before they existed
        for phase in data["phases"]:
            phase.pop("expect", None)
        data["expect"] = [e.model_dump(mode="json", exclude_unset=True, exclude_none=True) for e in self.expect]
        return data
