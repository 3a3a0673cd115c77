"""Fixtures of the emulator tests: `emu_cluster(...)` starts an embedded cluster and always closes it."""
from __future__ import annotations

import os

import pytest
from emu_cluster import EmuCluster


@pytest.fixture
def emu_cluster(tmp_path, request):
    """Factory: `emu_cluster(version=..., master_conf={...}, slave_conf={...}, cgroups=False)` -> started cluster."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop-mounted stores)")
    made: list[EmuCluster] = []

    def make(**kwargs) -> EmuCluster:
        wait_slave = kwargs.pop("wait_slave", True)
        cluster = EmuCluster(tmp_path / f"c{len(made)}", **kwargs)
        made.append(cluster)
        return cluster.start(wait_slave=wait_slave)

    yield make
    for cluster in made:
        cluster.close()
