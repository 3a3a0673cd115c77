"""Bad inventories and hosts, through `rmq-chaos run --backend ssh --hosts FILE` on the session's hosts: an unreachable
host, a refused key, an unknown host key, no Python at the named interpreter, no distribution for `program: apache`,
two nodes claiming one port on one host, a host the placement names that the inventory lacks. Each is one line on
stderr naming the host (or key) and what is missing, exit 2, and nothing on any host: no run directory, no work
directory made, no process of ours."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import REPO, inventory_text

pytestmark = pytest.mark.root
SCENARIO = REPO / "scenarios" / "slave-readonly-default.yaml"


def _refused(cluster, tmp_path: Path, inventory: str, args: list[str] = (), scenario: Path = SCENARIO,
             known_hosts: Path | None = None) -> str:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(inventory, encoding="utf-8")
    state, out = tmp_path / "state", tmp_path / "runs"
    before = {n: cluster.workdir(n).exists() for n in cluster.hosts.names}
    env_known = known_hosts or cluster.known_hosts
    proc = cluster.rmq_chaos(["run", str(scenario), "--out", str(out), "--backend", "ssh", "--hosts", str(inv),
                              *args], state, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             known_hosts=env_known)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert not out.exists(), "a run directory was made"
    for n in cluster.hosts.names:
        assert cluster.workdir(n).exists() == before[n], f"something was made on host {n}"
    return lines[0]


def test_an_unreachable_host(cluster, tmp_path: Path) -> None:
    text = inventory_text(cluster.hosts, tmp_path).replace(cluster.hosts.addr("n3"), f"10.{cluster.hosts.net}.0.99")
    line = _refused(cluster, tmp_path, text)
    assert "host n3" in line and "unreachable" in line


def test_a_refused_key(cluster, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    text = inventory_text(cluster.hosts, tmp_path).replace(str(cluster.hosts.user_key), str(other))
    line = _refused(cluster, tmp_path, text)
    assert "the key was refused" in line and "host n" in line


def test_an_unknown_host_key_is_never_accepted_silently(cluster, tmp_path: Path) -> None:
    partial = cluster.hosts.known_hosts_for(tmp_path / "known_hosts", ["n1", "n3", "n4"])
    line = _refused(cluster, tmp_path, inventory_text(cluster.hosts, tmp_path), known_hosts=partial)
    assert "host n2" in line and "host key" in line and "--accept-new-host-keys" in line


def test_no_python_at_the_interpreter(cluster, tmp_path: Path) -> None:
    text = inventory_text(cluster.hosts, tmp_path, n2=", ansible_python_interpreter: /nonexistent/python3.11")
    line = _refused(cluster, tmp_path, text)
    assert "host n2" in line and "no Python at '/nonexistent/python3.11'" in line


def test_no_distribution_for_the_apache_program(cluster, tmp_path: Path) -> None:
    text = inventory_text(cluster.hosts, tmp_path, n3=", rmq_chaos_rocketmq_home: /nonexistent/rocketmq")
    line = _refused(cluster, tmp_path, text, ["--program", "apache"])
    assert "host n" in line and "no Apache RocketMQ distribution" in line


def test_two_nodes_claiming_one_port_of_one_host(cluster, tmp_path: Path) -> None:
    scenario = tmp_path / "clash.yaml"
    scenario.write_text(SCENARIO.read_text().replace(
        "  version: \"4.9.1\"\n", "  version: \"4.9.1\"\n  backend: ssh\n  placement: {namesrv: n1, master: \"n2:30100\", "
        "slave: \"n2:30100\"}\n", 1), encoding="utf-8")
    line = _refused(cluster, tmp_path, inventory_text(cluster.hosts, tmp_path), scenario=scenario)
    assert "n2:30100 is claimed by master too" in line


def test_a_placement_host_the_inventory_lacks(cluster, tmp_path: Path) -> None:
    scenario = tmp_path / "elsewhere.yaml"
    scenario.write_text(SCENARIO.read_text().replace(
        "  version: \"4.9.1\"\n", "  version: \"4.9.1\"\n  backend: ssh\n  placement: {namesrv: n1, master: n2, slave: n9}\n", 1),
        encoding="utf-8")
    line = _refused(cluster, tmp_path, inventory_text(cluster.hosts, tmp_path), scenario=scenario)
    assert "host 'n9' is not in the inventory" in line
