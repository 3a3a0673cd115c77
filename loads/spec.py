"""`LoadSpec`: what load to drive. The topic and name server, the load model (open: a target rate in sends/s;
closed: a number of users with an optional think time), the named clients (`flood`, `probe`, ...) each with its own
producer settings and its share of the load (or its own rate/users), and per-phase rates.

A spec is a pydantic model that round-trips through JSON (`LoadSpec.model_validate_json(spec.model_dump_json())`);
`load_spec(path)` reads one from a JSON or YAML file and `spec_from_env()` builds one from environment variables
(for `locust -f loads/locustfile.py`). Bad input raises `SpecError` with one line naming the file, key and allowed
values.

Example::

    LoadSpec(topic="ChaosTopic", namesrv="127.0.0.1:9876", model="open", rate=2000, clients=[
        ClientSpec(name="flood", users=64, send_timeout_ms=3000),
        ClientSpec(name="probe", model="closed", users=1, send_timeout_ms=30000),
    ])
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

ModelT = TypeVar("ModelT", bound=BaseModel)
MODELS = ("open", "closed")
DEFAULT_OPEN_USERS = 64
DEFAULT_CLOSED_USERS = 64
DEFAULT_DRAIN_MARGIN_S = 5.0
DEFAULT_MAX_LAG_S = 5.0
"""Open model: a slot not started within this long of its intended time is dropped (counted, never sent)."""
MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # the broker's default maxMessageSize
NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
ENV_PREFIX = "RMQ_LOAD_"
ENV_SPEC_FILE = "RMQ_LOAD_SPEC"
ENV_KEYS: dict[str, str] = {
    # environment variable (without the prefix) -> spec key
    "TOPIC": "topic",
    "NAMESRV": "namesrv",
    "MODEL": "model",
    "RATE": "rate",
    "USERS": "users",
    "THINK_TIME_S": "think_time_s",
    "MESSAGE_SIZE": "message_size",
    "TAGS": "tags",
    "PROFILE": "profile",
    "SEND_TIMEOUT_MS": "send_timeout_ms",
    "RETRIES": "retries",
    "GROUP": "group",
}
CLIENT_ENV_KEYS = ("message_size", "tags", "profile", "send_timeout_ms", "retries", "group")


class SpecError(ValueError):
    """A load spec that cannot be used; the message is one line naming the source, key and allowed values."""


class ClientSpec(BaseModel):
    """One producer group of the load. Every user of a client in a worker process shares one `Producer`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="the `client` column of request rows, e.g. flood, probe")
    group: str | None = Field(default=None, description="producer group; default `rmq-chaos-<name>`")
    model: Literal["open", "closed"] | None = Field(default=None, description="default: the load's model")
    share: float | None = Field(default=None, gt=0, le=1, description="share of the load's rate (open) or users "
                                                                        "(closed); default: an equal part of what "
                                                                        "the clients with a share left over")
    rate: float | None = Field(default=None, ge=0, description="own sends/s (open), not following the load's rate")
    users: int | None = Field(default=None, ge=1, description="own users: the senders of a closed client, the "
                                                               "concurrency of an open one")
    max_users: int | None = Field(default=None, ge=1, description="open: the most sends in flight at once; "
                                                                   "spare senders start when every user is busy "
                                                                   "and a slot is due (default: users)")
    max_lag_s: float | None = Field(default=None, gt=0, description="open: a slot not started within this long "
                                                                     "of its intended time is dropped (default: "
                                                                     "the load's max_lag_s)")
    think_time_s: float | None = Field(default=None, ge=0, description="closed: pause after each send")
    message_size: int = Field(default=128, ge=1, le=MAX_MESSAGE_SIZE, description="body bytes")
    tags: str | None = Field(default=None, description="TAGS property")
    keys: list[str] = Field(default_factory=list, description="extra KEYS after the harness key")
    profile: Literal["java-4.9.1", "java-4.9.3", "java-5.3"] = "java-4.9.1"
    send_timeout_ms: int = Field(default=3000, ge=1, description="the timeout of `send(msg, timeout)`")
    retries: int | None = Field(default=None, ge=0, description="retryTimesWhenSendFailed; default: the profile's")
    serialize_type: Literal["JSON", "ROCKETMQ"] = Field(
        default="JSON", description="the request header's encoding (`rocketmq.serialize.type`): JSON, the Java "
                                    "client's default, or RocketMQ's binary layout")
    instance: str | None = Field(default=None, pattern=NAME_PATTERN,
                                 description="client instance (Java's instanceName): clients naming the same one "
                                             "share its connections, as producers of one JVM do; default: its own")
    send_latency_fault_enable: bool | None = Field(
        default=None, description="the producer's sendLatencyFaultEnable (MQFaultStrategy: avoid slow or failing "
                                  "broker groups for a while); None: the profile's default, off in every version")
    retry_another_broker_when_not_store_ok: bool | None = Field(
        default=None, description="retryAnotherBrokerWhenNotStoreOK; None: the profile's default, off in every version")

    @property
    def producer_group(self) -> str:
        return self.group or f"rmq-chaos-{self.name}"

    @property
    def instance_name(self) -> str:
        return self.instance or self.name


class PhaseSpec(BaseModel):
    """A phase's rates. The harness names the phase with `LoadProcess.set_phase`; `duration_s` is used only when the
    load runs its phases itself (standalone or `locust -f`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    rate: float | None = Field(default=None, ge=0, description="the load's rate in this phase (open clients "
                                                                 "with a share)")
    rates: dict[str, float] = Field(default_factory=dict, description="own rates of named open clients")
    duration_s: float | None = Field(default=None, gt=0)


class LoadSpec(BaseModel):
    """The whole load of a run."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=127, pattern=r"^[%|A-Za-z0-9_-]+$")
    namesrv: str = Field(min_length=3, description="name server address(es), `host:port[;host:port]`")
    model: Literal["open", "closed"] = "open"
    rate: float | None = Field(default=None, ge=0, description="open: sends/s of the whole test, all workers")
    users: int | None = Field(default=None, ge=1, description="users of the whole test (default 64)")
    think_time_s: float = Field(default=0.0, ge=0, description="closed: pause after each send")
    max_lag_s: float = Field(default=DEFAULT_MAX_LAG_S, gt=0, description="open: a slot not started within this "
                                                                           "long of its intended time is dropped")
    clients: list[ClientSpec] = Field(default_factory=lambda: [ClientSpec(name="flood")], min_length=1)
    phases: list[PhaseSpec] = Field(default_factory=list)
    initial_phase: str | None = Field(default=None, description="phase of requests before the first set_phase; "
                                                                 "default: the first phase's name")
    flush_interval_s: float = Field(default=1.0, gt=0, le=1.0, description="how often rows reach Parquet")
    drain_timeout_s: float | None = Field(default=None, gt=0, description="how long stop waits for sends in "
                                                                          "flight; default: longest send "
                                                                          "timeout + 5 s")

    @model_validator(mode="after")
    def _consistent(self) -> LoadSpec:
        names = [c.name for c in self.clients]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"clients: names must be unique, repeated: {', '.join(dupes)}")
        for addr in self.namesrv.split(";"):
            host, _, port = addr.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"namesrv: {addr!r} is not host:port")
        open_shared = [c.name for c in self.clients if self._needs_share(c) and self.model_of(c) == "open"]
        if open_shared and self.rate is None and not any(p.rate is not None for p in self.phases):
            raise ValueError(f"rate: open client(s) {', '.join(open_shared)} take a share of the load's rate: "
                             "give `rate` (sends/s), a phase `rate`, or the clients their own `rate`")
        profiles: dict[str, str] = {}
        for c in self.clients:
            if profiles.setdefault(c.instance_name, c.profile) != c.profile:
                raise ValueError(f"clients.{c.name}.instance: instance {c.instance_name!r} is shared by clients of "
                                 f"profiles {profiles[c.instance_name]} and {c.profile}; allowed: one profile per "
                                 "instance (one client config per MQClientInstance)")
        for c in self.clients:
            if c.max_users is not None and self.model_of(c) == "closed":
                raise ValueError(f"clients.{c.name}.max_users: a closed client has exactly its users; allowed: "
                                 "max_users on an open client")
            if c.max_users is not None and c.users is not None and c.max_users < c.users:
                raise ValueError(f"clients.{c.name}.max_users: {c.max_users} is fewer than its users ({c.users}); "
                                 f"allowed: {c.users} or more")
        total = sum(c.share or 0.0 for c in self.clients)
        if total > 1.0 + 1e-9:
            raise ValueError(f"clients: shares add up to {total:g}, more than 1")
        for phase in self.phases:
            unknown = sorted(set(phase.rates) - set(names))
            if unknown:
                raise ValueError(f"phases.{phase.name}.rates: unknown client(s) {', '.join(unknown)}; "
                                 f"clients: {', '.join(names)}")
        if self.initial_phase is None and self.phases:
            self.initial_phase = self.phases[0].name
        return self

    # --- resolution -------------------------------------------------------------------------------------------

    def model_of(self, client: ClientSpec) -> str:
        return client.model or self.model

    def _needs_share(self, client: ClientSpec) -> bool:
        if self.model_of(client) == "open":
            return client.rate is None
        return client.users is None

    def share_of(self, client: ClientSpec) -> float:
        """The client's part of the load's rate (open) or users (closed); 0 when it has its own."""
        if not self._needs_share(client):
            return 0.0
        if client.share is not None:
            return client.share
        given = sum(c.share for c in self.clients if c.share is not None and self._needs_share(c))
        rest = [c for c in self.clients if c.share is None and self._needs_share(c)]
        return max(0.0, 1.0 - given) / len(rest)

    def phase(self, name: str) -> PhaseSpec | None:
        return next((p for p in self.phases if p.name == name), None)

    def rate_in(self, phase: str, rate: float | None, current: float | None) -> float | None:
        """The load's rate when phase `phase` begins: `rate` if given, else the phase's rate in the spec, else
        `current` (unchanged)."""
        if rate is not None:
            return rate
        spec_phase = self.phase(phase)
        if spec_phase is not None and spec_phase.rate is not None:
            return spec_phase.rate
        return current

    @property
    def drain_s(self) -> float:
        """How long a stop waits for sends in flight before abandoning them."""
        if self.drain_timeout_s is not None:
            return self.drain_timeout_s
        return max(c.send_timeout_ms for c in self.clients) / 1000.0 + DEFAULT_DRAIN_MARGIN_S

    def plan(self, rate: float | None = None, phase: str | None = None) -> dict[str, ClientPlan]:
        """Per client: model, users, rate (open) and think time, for the load's `rate` (None: the spec's) and the
        own rates `phase` names."""
        total_rate = self.rate if rate is None else rate
        phase_rates = (self.phase(phase).rates if phase and self.phase(phase) else {})
        out: dict[str, ClientPlan] = {}
        for c in self.clients:
            share = self.share_of(c)
            model = self.model_of(c)
            if model == "open":
                if c.name in phase_rates:
                    r = phase_rates[c.name]
                elif c.rate is not None:
                    r = c.rate
                else:
                    r = (total_rate or 0.0) * share
                users = c.users or max(1, math.ceil((self.users or DEFAULT_OPEN_USERS) * (share or 1.0)))
                out[c.name] = ClientPlan(c.name, "open", users, r, 0.0, max(users, c.max_users or users),
                                         c.max_lag_s or self.max_lag_s)
            else:
                users = c.users or max(1, round((self.users or DEFAULT_CLOSED_USERS) * share))
                think = self.think_time_s if c.think_time_s is None else c.think_time_s
                out[c.name] = ClientPlan(c.name, "closed", users, None, think, users, None)
        return out

    def to_file(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        p.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return p


@dataclass(frozen=True)
class ClientPlan:
    """A client resolved against the load: how many users, at what rate (open) or think time (closed)."""

    name: str
    model: str
    users: int
    rate: float | None
    think_time_s: float
    max_users: int
    """open: the most sends in flight at once over all workers (users plus spare senders)"""
    max_lag_s: float | None
    """open: how late a slot may start before it is dropped"""

    @property
    def rate_per_user(self) -> float:
        return (self.rate or 0.0) / self.users

    def spares_for(self, local_users: int) -> int:
        """Spare senders one process may start for its `local_users` users (its share of max_users - users)."""
        return math.ceil(local_users * self.max_users / self.users) - local_users


def validation_line(source: str, err: ValidationError) -> str:
    """A pydantic error as one line: the source, the first failing key and its message (and how many more)."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = first["msg"].replace("Value error, ", "")
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{source}: {loc + ': ' if loc else ''}{msg}{more}"


def parse_model(model: type[ModelT], data: Any, source: str, what: str) -> ModelT:
    """Validate a mapping as `model` (`what` names it in the error); raises `SpecError` with one line."""
    if not isinstance(data, dict):
        raise SpecError(f"{source}: {what} is a mapping of keys to values, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise SpecError(validation_line(source, e)) from None


def parse_spec(data: Any, source: str = "load spec") -> LoadSpec:
    """Validate a mapping as a `LoadSpec`; raises `SpecError` with one line."""
    return parse_model(LoadSpec, data, source, "a load spec")


def load_spec(path: str | os.PathLike[str]) -> LoadSpec:
    """Read a spec from a `.json`, `.yaml` or `.yml` file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"{p}: cannot read: {e.strerror or e}") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        raise SpecError(f"{p}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: "
                        f"{str(e).splitlines()[0]}") from None
    return parse_spec(data, str(p))


def spec_from_env(environ: dict[str, str] | None = None) -> LoadSpec:
    """A spec from `RMQ_LOAD_SPEC` (a file), else a one-client spec from `RMQ_LOAD_TOPIC`, `RMQ_LOAD_NAMESRV`,
    `RMQ_LOAD_MODEL`, `RMQ_LOAD_RATE`, `RMQ_LOAD_USERS`, ... (see `ENV_KEYS`)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_SPEC_FILE):
        return load_spec(env[ENV_SPEC_FILE])
    top: dict[str, Any] = {}
    client: dict[str, Any] = {"name": env.get(f"{ENV_PREFIX}CLIENT", "flood")}
    for var, key in ENV_KEYS.items():
        value = env.get(ENV_PREFIX + var)
        if value is None or value == "":
            continue
        (client if key in CLIENT_ENV_KEYS else top)[key] = value
    if "topic" not in top or "namesrv" not in top:
        raise SpecError(f"environment: set {ENV_SPEC_FILE} to a spec file, or {ENV_PREFIX}TOPIC and "
                        f"{ENV_PREFIX}NAMESRV (optional: "
                        f"{', '.join(ENV_PREFIX + v for v in ENV_KEYS if v not in ('TOPIC', 'NAMESRV'))})")
    top["clients"] = [client]
    try:
        return LoadSpec.model_validate(top)
    except ValidationError as e:
        first = e.errors()[0]
        key = str(first["loc"][-1]) if first["loc"] else ""
        var = next((ENV_PREFIX + v for v, k in ENV_KEYS.items() if k == key), key)
        raise SpecError(f"environment: {var}: {first['msg'].replace('Value error, ', '')}") from None
