"""Hostile inventories are refused when they are read (`harness.hosts.inventory`), before anything starts: shell or
ssh-option text in a host's address, user, port, interpreter, work directory or venv; a work directory or venv that
is `/`, relative, has `..` parts, is a system directory, a home directory or under a kernel file system, or lies in
a venv (which an install empties); an alias bomb. Each refusal is one `SourceError` line naming the file, the key
path where the value was written and what is allowed. Plain values an operator writes are kept."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.hosts.inventory import DEFAULT_WORKDIR, load_inventory
from harness.scenario.reader import SourceError


def _inventory(tmp_path: Path, host_vars: str, group_vars: str = "ansible_user: root") -> Path:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(f"all:\n  vars: {{{group_vars}}}\n  hosts:\n    n1: {{note: a host of the test{host_vars}}}\n"
                   f"    n2: {{ansible_host: 10.0.0.12}}\n", encoding="utf-8")
    return inv


def _refused(inv: Path, key_path: str) -> str:
    with pytest.raises(SourceError) as err:
        load_inventory(inv)
    line = str(err.value)
    assert "\n" not in line and "\r" not in line, line
    assert line.startswith(f"{inv}:"), line
    assert key_path in line and "allowed:" in line, line
    return line


HOSTILE = {
    "ansible_host": ["-oProxyCommand=touch /tmp/pwned", "10.0.0.1 -p 2222", "10.0.0.1\n", "$(id)", "a;b", "a b",
                     "root@10.0.0.1", "", "[::1]"],
    "ansible_user": ["-lroot", "root\n", "ro ot", "root;id", "$(id)", "-oProxyCommand=x"],
    "ansible_become_user": ["-u", "root --", "root\n"],
    "ansible_port": ["22 -oProxyCommand=x", "²", "٢٢", "-1", 0, 65536, True, "0x16", "22\n", ""],
    "ansible_python_interpreter": ["python3; rm -rf /", "-c", "/usr/bin/env python3", "$(id)", "/usr/../bin/python3",
                                  "python3\n", "bin/python3", "`id`", "", "/usr/bin/python3 -I"],
    "rmq_chaos_workdir": ["/", "/tmp", "/opt", "/var", "/var/lib", "/var/lib/", "/usr", "/usr/local", "/usr/bin",
                          "/var/tmp", "/var/log", "/etc", "/home", "/home/alice", "/root", "/srv", "/boot", "/run",
                          "/proc/1", "/sys/fs/x", "/dev/shm/x", "relative/dir", "rmq", "../x", "/srv/../etc",
                          "/srv/./x", "//srv/x", "/srv//x", "/srv/a b", "/srv/a\nb", "/srv/$(id)", "-rf", "/srv/`id`",
                          "/srv/x;rm -rf /", "/srv/x'y", "", 5, ["/srv/x"], {"a": 1}, True, "/srv/x\\y", "~/rmq"],
    "rmq_chaos_venv": ["/", "/opt", "/usr/local", "/var/lib", "/tmp", "/home/bob", "relative", "/srv/../usr",
                       "/srv/v env", "/srv/$(reboot)", "-venv", "/srv/v\n"],
    "rmq_chaos_rocketmq_home": ["relative/rocketmq", "/opt/../rocketmq", "/opt/rocket mq", "/opt/$(id)", "-x", ""],
}


@pytest.mark.parametrize(("key", "value"), [(k, v) for k, vs in HOSTILE.items() for v in vs],
                         ids=lambda x: repr(x)[:40])
def test_a_hostile_host_value_is_refused_in_one_line(tmp_path: Path, key: str, value) -> None:
    import json

    _refused(_inventory(tmp_path, f", {key}: {json.dumps(value)}"), f"all.hosts.n1.{key}: ")


@pytest.mark.parametrize("value", ["/tmp", "/opt", "/var/lib", "relative", "/srv/x y"])
def test_a_hostile_group_value_is_named_where_it_was_written(tmp_path: Path, value: str) -> None:
    line = _refused(_inventory(tmp_path, "", f"rmq_chaos_venv: '{value}'"), "all.vars.rmq_chaos_venv")
    assert f"{_inventory(tmp_path, '')}:2:" in line, line  # the line of the group's vars


def test_the_refusals_say_what_is_allowed(tmp_path: Path) -> None:
    line = _refused(_inventory(tmp_path, ", rmq_chaos_workdir: /opt"), "all.hosts.n1.rmq_chaos_workdir")
    assert "'/opt' is a system directory" in line
    assert "allowed: an absolute path of letters, digits and / . _ - + @" in line and "/opt/rmq-chaos" in line
    line = _refused(_inventory(tmp_path, ", rmq_chaos_workdir: '/srv/a b'"), "rmq_chaos_workdir")
    assert "has characters not allowed in a path" in line
    line = _refused(_inventory(tmp_path, ", ansible_host: '-oProxyCommand=id'"), "ansible_host")
    assert "starting with a letter or digit" in line
    line = _refused(_inventory(tmp_path, ", ansible_python_interpreter: 'python3; rm -rf /'"), "interpreter")
    assert "allowed: a command name such as python3.11, or an absolute path" in line


@pytest.mark.parametrize(("host_vars", "what"), [
    (", rmq_chaos_workdir: /srv/rmq, rmq_chaos_venv: /srv/rmq", "'/srv/rmq' (rmq_chaos_workdir of host n1) is the venv"),
    (", rmq_chaos_workdir: /srv/v/work, rmq_chaos_venv: /srv/v", "is inside the venv of host n1"),
    (", rmq_chaos_workdir: /var/lib/rmq-chaos-agent/venv/w", "the venv of host n2 (/var/lib/rmq-chaos-agent/venv)"),
    (", rmq_chaos_venv: /var/lib/rmq-chaos-agent/venv/inner", "inside the venv of host n2"),
])
def test_nothing_lies_in_a_venv_which_an_install_empties(tmp_path: Path, host_vars: str, what: str) -> None:
    line = _refused(_inventory(tmp_path, host_vars), "all.hosts.n1.rmq_chaos_")
    assert what in line and "an install empties" in line, line


def test_plain_values_are_kept(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text("all:\n  vars: {rmq_chaos_venv: /opt/rmq-chaos/venv}\n  hosts:\n"
                   "    n1: {ansible_host: 10.0.0.11, ansible_port: '2222', rmq_chaos_workdir: /srv/rmq-chaos/}\n"
                   "    n2: {ansible_host: host-2.example.com, ansible_user: deploy, ansible_become: true,"
                   " ansible_python_interpreter: /usr/bin/python3.11, rmq_chaos_workdir: /tmp/rmq-chaos-n2,"
                   " rmq_chaos_rocketmq_home: /opt}\n"
                   "    n3: {ansible_host: 'fe80::1', ansible_python_interpreter: python3.11,"
                   " rmq_chaos_workdir: /home/alice/rmq-chaos}\n"
                   "    n4: {}\n", encoding="utf-8")
    hosts = load_inventory(inv).hosts
    assert hosts["n1"].workdir == "/srv/rmq-chaos" and hosts["n1"].port == 2222
    assert {h.venv_dir for h in hosts.values()} == {"/opt/rmq-chaos/venv"}  # one venv shared by the hosts
    assert hosts["n2"].python == "/usr/bin/python3.11" and hosts["n2"].rocketmq_home == "/opt"
    assert hosts["n2"].workdir == "/tmp/rmq-chaos-n2" and hosts["n3"].workdir == "/home/alice/rmq-chaos"
    assert hosts["n4"].workdir == DEFAULT_WORKDIR and hosts["n4"].address == "n4"


def test_an_alias_bomb_is_refused_in_one_line(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yaml"
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]  # 9^10 values once expanded
    lines += ["all:", "  vars: {bomb: *a9}", "  hosts: {n1: {ansible_host: 10.0.0.11}}"]
    inv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SourceError) as err:
        load_inventory(inv)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{inv}:") and "alias bomb" in line and "allowed:" in line, line


def test_a_hosts_own_value_beats_its_groups_whatever_the_order(tmp_path: Path) -> None:
    """A host listed again in a child group after its own variables keeps them (a group's `vars` applied again
    used to replace them: the work directory named for the host was not the one used)."""
    inv = tmp_path / "inventory.yaml"
    inv.write_text("all:\n  vars: {rmq_chaos_venv: /srv/shared/venv, rmq_chaos_workdir: /srv/all}\n  hosts:\n"
                   "    n1: {rmq_chaos_workdir: /srv/n1, rmq_chaos_venv: /srv/n1/venv}\n"
                   "    n2: {}\n"
                   "  children:\n"
                   "    master: {hosts: {n1: {}}}\n"
                   "    slave: {vars: {rmq_chaos_workdir: /srv/slaves}, hosts: {n2: {}}}\n"
                   "    load: {hosts: {n2: {}}}\n", encoding="utf-8")
    hosts = load_inventory(inv).hosts
    assert (hosts["n1"].workdir, hosts["n1"].venv_dir) == ("/srv/n1", "/srv/n1/venv")
    assert (hosts["n2"].workdir, hosts["n2"].venv_dir) == ("/srv/slaves", "/srv/shared/venv")  # the child group's
    assert hosts["n1"].groups == ("all", "master") and hosts["n2"].groups == ("all", "slave", "load")
