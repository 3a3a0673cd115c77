"""Fixtures of the emulator tests: `emu_cluster(...)` starts an embedded cluster and always closes it;
`controller_cluster(...)` the same for a 5.x controller-mode cluster (`emu_controller_cluster`)."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest
from emu_cluster import EmuCluster
from emu_controller_cluster import ControllerCluster


def _factory(cls: type[EmuCluster], root, prefix: str) -> Iterator[Callable[..., EmuCluster]]:
    """`make(**kwargs)` starts a `cls` cluster in a directory of its own (`wait_slave` passed to `start`); every
    cluster made is closed at the end."""
    made: list[EmuCluster] = []

    def make(**kwargs) -> EmuCluster:
        wait_slave = kwargs.pop("wait_slave", True)
        cluster = cls(root / f"{prefix}{len(made)}", **kwargs)
        made.append(cluster)
        return cluster.start(wait_slave=wait_slave)

    yield make
    for cluster in made:
        cluster.close()


@pytest.fixture
def emu_cluster(tmp_path, request):
    """Factory: `emu_cluster(version=..., master_conf={...}, slave_conf={...}, cgroups=False)` -> started cluster."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop-mounted stores)")
    yield from _factory(EmuCluster, tmp_path, "c")


@pytest.fixture
def controller_cluster(tmp_path):
    """Factory: `controller_cluster(controllers=0|3, brokers=2, broker_conf={...}, controller_conf={...},
    wait_slave=True)` -> started ControllerCluster (stores in plain directories; no root needed)."""
    yield from _factory(ControllerCluster, tmp_path, "cc")
