"""The compose backend in controller mode (RocketMQ 5.x, `cluster.mode: controller`): the name server (the controller
embedded in it, or three standalone controllers `controller-0..2`) and every broker of every broker set of the
topology, each a container of the run's compose project as `ComposeBackend` makes them (one network namespace, a
loop-mounted store per broker, cgroups under the run's parent), with the conf files of
`harness.backends.controller_conf` and the services of `compose.controller.yml`
(harness/backends/compose_controller_layout.py). `docker compose up --no-start` makes the containers; they are
started in controller mode's order (each set's first broker alone until the controller names it master). Start
order, roles, readiness, role samplers, targets and the read-back: `harness.backends.controller_mode`, as on the
local and ssh backends."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.backends import controller_conf as conf
from harness.backends.base import ClusterError
from harness.backends.compose import ComposeBackend
from harness.backends.compose_controller_layout import ControllerComposeLayout
from harness.backends.compose_layout import ComposeLayout
from harness.backends.controller_mode import ControllerMode
from harness.backends.ports import PortPicker
from harness.rundir import RunDir
from harness.scenario import Scenario


class ComposeControllerBackend(ControllerMode, ComposeBackend):
    START_ON_UP = False

    def __init__(self, scenario: Scenario, rd: RunDir, journal: Any, state_dir: Path) -> None:
        super().__init__(scenario, rd, journal, state_dir)
        self.init_controller_mode()

    def make_layout(self, picker: PortPicker) -> ComposeLayout:
        c = self.scenario.cluster
        if self.use_relay():
            raise ClusterError("the HA relay (fault ha_link, cluster.ha_relay) is not placed in controller mode")
        ns_port = picker.one()
        ctl = conf.ControllerLayout(tuple(picker.one() for _ in (self.controller_nodes or ("namesrv",))))
        ports = {n: picker.broker() for n in self.broker_nodes}
        self.prepare_host()
        return ControllerComposeLayout(self.work, self.project_name, self.image, c.version, c.heap,
                                       self.cgroup_parent, ns_port, ports, network_mode=self.network_mode, ctl=ctl,
                                       controllers=self.controller_nodes)

    def extra_files(self, base: Path) -> tuple[Path, ...]:
        assert isinstance(self.layout, ControllerComposeLayout)
        return (self.layout.write_services(self.topology, base),)

    def start_nodes(self, say: Callable[[str], None]) -> None:
        super().start_nodes(say)  # the containers made, none started
        assert isinstance(self.layout, ControllerComposeLayout)
        self.make_roles(self.layout.ctl.addrs)

        def start(n: str) -> None:
            say(f"cluster: starting {n} ({self.nodes[n].addr})")
            self.nodes[n].start()

        def start_waiting(n: str) -> None:
            start(n)
            self.nodes[n].wait_ready(self.scenario.cluster.ready_timeout)

        self.start_in_order(start, start_waiting)
