"""The `cluster:` section of a scenario: backend, broker program and version, image, heap, store size and the
per-node broker.conf overrides (linted against the version by `harness.scenario.lint`)."""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from harness.scenario.controller_keys import check_mode, controllers_value
from harness.scenario.schema import Duration, Name, Size, Strict, at

NODE_NAMES = ("namesrv", "master", "slave")
MAX_GROUPS = 8
GROUP_BACKENDS = ("local", "compose", "ssh")
"""The backends that place several broker groups (the others refuse `cluster.groups` > 1 in one line)."""
PLACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}(:\d{1,5})?$")
BROKER_NODES = ("master", "slave")
IMAGE_RE = re.compile(r"^[a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*"
                      r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$")
VERSION_RE = re.compile(r"^(4\.9\.[0-8]|5\.[0-3]\.\d{1,2})$")
VERSIONS_ALLOWED = "4.9.0 to 4.9.8, 5.0.x to 5.3.x (as a quoted string, e.g. \"4.9.1\")"
HEAP_RE = re.compile(r"^(\s*-Xm[sxn]\d+[kKmMgG]?)+\s*$")
DEFAULT_HEAP = "-Xms128m -Xmx128m -Xmn64m"
DEFAULT_STORE_SIZE = "4GiB"
MIN_STORE_SIZE = 32 * 1024 * 1024
MAX_CONF_KEYS = 512

ConfValue = str | int | float | bool
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters that would end or bend a line of broker.conf (Java properties): never in a key or value."""


def _printable(conf: dict[str, ConfValue]) -> dict[str, ConfValue]:
    """Refuse a key or text value holding a control character: written into a properties file it would start a
    line of its own (a newline in msgTraceTopicName could set storePathCommitLog outside the node's store)."""
    for key, value in conf.items():
        for what, text in (("key", key), ("value", value)):
            if isinstance(text, str) and (m := CONTROL_RE.search(text)):
                raise at((key,), f"the {what} holds the control character {m.group()!r} at {m.start()}; allowed: "
                                 "printable text (a properties file would read it as a line break or worse)")
    return conf


BrokerConf = Annotated[dict[str, ConfValue], Field(max_length=MAX_CONF_KEYS), AfterValidator(_printable)]


class BrokerConfSection(Strict):
    """broker.conf overrides: `common` for both brokers, then `master` / `slave` for one of them (Apache key names)."""

    common: BrokerConf = {}
    master: BrokerConf = {}
    slave: BrokerConf = {}

    def for_node(self, node: str) -> dict[str, ConfValue]:
        return {**self.common, **getattr(self, node, {})}  # controller mode: broker-N get `common`


class ClusterSpec(Strict):
    """What to stand up: backend, broker program and version, per-node broker.conf overrides, store size."""

    backend: Literal["local", "compose", "ssh"] = Field(
        default="local", description="local: processes on this machine; compose: containers of compose/ (Docker); "
                                     "ssh: processes on the hosts of an inventory, through a host agent")
    hosts: str | dict[str, Any] | None = Field(
        default=None, description="ssh: the inventory (Ansible YAML): a file (relative to the scenario file), or the "
                                  "inventory itself; `--hosts FILE` overrides")
    placement: dict[str, str] = Field(
        default={}, description="ssh: the host of each node (namesrv, master, slave; `broker-b-master` ... with "
                                "several groups): `host` or `host:port`")
    image: str | None = Field(default=None, description="compose: the image of every node (default $ROCKETMQ_IMAGE, "
                                                        "else apache/rocketmq:<version>; '{version}' is replaced)")
    program: Literal["emulator", "apache"] = Field(
        default="emulator", description="emulator: the embedded cluster; apache: the distribution at $ROCKETMQ_HOME")
    version: str = Field(default="4.9.1", description="RocketMQ version (selects the emulator's version profile)")
    cluster_name: Name = "DefaultCluster"
    broker_name: Name = "broker-a"
    groups: int | list[Name] = Field(
        default=1, description="broker groups: a count (1-8; several are broker-a, broker-b, ...) or their names; each "
                               "group is a master and its slave (its own broker set in controller mode), and the "
                               "topic has its queues on every group")
    store_size: Size = Field(default=DEFAULT_STORE_SIZE, description="size of each broker's loop-mounted ext4 store")
    heap: str = Field(default=DEFAULT_HEAP, description="HEAP_OPTS of each broker (-Xms/-Xmx/-Xmn)")
    namesrv: BrokerConf = {}
    broker: BrokerConfSection = BrokerConfSection()
    allow_keys: list[str] = Field(default=[], description="broker.conf keys the version lacks, allowed on purpose")
    ha_relay: Literal["auto", "always", "never"] = Field(
        default="auto", description="put the HA relay on the slave's path to the master (auto: when ha_link is used)")
    ready_timeout: Duration = "60s"
    mode: Literal["master_slave", "controller"] = Field(
        default="master_slave", description="master_slave: fixed roles (brokerId 0 and 1); controller: 5.x "
                                            "controller mode, the controller elects the master (RIP-44)")
    controllers: Annotated[str | int, BeforeValidator(controllers_value)] = Field(
        default="embedded", description="controller mode: `embedded` (in the name server) or 3 (standalone)")
    slaves: int = Field(default=1, ge=1, le=2, description="how many slaves (2: controller mode only)")
    controller: BrokerConf = Field(default={}, description="controller mode: the controllers' conf overrides "
                                                           "(e.g. enableElectUncleanMaster)")

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

    @field_validator("groups")
    @classmethod
    def _groups(cls, v: int | list[str]) -> int | list[str]:
        if isinstance(v, bool) or (isinstance(v, int) and not 1 <= v <= MAX_GROUPS):
            raise ValueError(f"{v!r} broker groups; allowed: 1 to {MAX_GROUPS}, or a list of 1 to {MAX_GROUPS} names")
        if isinstance(v, list):
            if not 1 <= len(v) <= MAX_GROUPS:
                raise ValueError(f"{len(v)} group names; allowed: 1 to {MAX_GROUPS} names")
            dup = next((n for i, n in enumerate(v) if n in v[:i]), None)
            if dup is not None:
                raise ValueError(f"{dup!r} is named twice; allowed: distinct names")
        return v

    @model_validator(mode="after")
    def _backend(self) -> ClusterSpec:
        check_mode(self)
        several = self.groups != 1 and not (isinstance(self.groups, list) and len(self.groups) == 1)
        if (isinstance(self.groups, list) or several) and self.broker_name != "broker-a":
            raise at(("broker_name",), "names the one broker group; with cluster.groups name them there; allowed: "
                                       "broker_name with one group, or the names in cluster.groups")
        if several and self.backend not in GROUP_BACKENDS:
            raise at(("groups",), f"several broker groups are placed on backend {', '.join(GROUP_BACKENDS)} so far "
                                  f"(cluster.backend is {self.backend}); allowed: 1 group, or backend "
                                  f"{', '.join(GROUP_BACKENDS)}")
        if self.backend == "compose" and self.program == "apache":
            raise at(("program",), "'apache' runs the distribution at $ROCKETMQ_HOME on this machine; with backend "
                                   "compose the image is the program (cluster.image); allowed: emulator, or backend "
                                   "local")
        if self.backend != "compose" and self.image is not None:
            raise at(("image",), "applies to backend compose only; allowed: backend compose, or no image")
        if self.backend != "ssh":
            for key in ("hosts", "placement"):
                if getattr(self, key):
                    raise at((key,), f"applies to backend ssh only; allowed: backend ssh, or no {key}")
            return self
        from harness.topology import Topology

        nodes = Topology.of(self).node_order
        for node in self.placement:
            if node not in nodes:
                raise at(("placement", node), f"no node {node!r}; allowed: {', '.join(nodes)}")
        missing = [n for n in nodes if n not in self.placement]
        if self.placement and missing:
            raise at(("placement",), f"placement names some nodes but not {', '.join(missing)}; allowed: every node, "
                                     "or none (then the inventory's groups namesrv, master, slave place them)")
        seen: dict[str, str] = {}
        for node, where in self.placement.items():
            _host, _, port = where.partition(":")
            if not PLACE_RE.match(where) or (port and not 0 < int(port) < 65536):
                raise at(("placement", node), f"{where!r} is not a host; allowed: host or host:port (1-65535)")
            if port and where in seen:
                raise at(("placement", node), f"{where} is claimed by {seen[where]} too; allowed: one node per port "
                                              "of a host")
            seen[where] = node
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

