"""The scenario file a finding writes: the mechanism's shipped scenario with the user's version and broker.conf.

The shipped scenario (`scenarios/<name>.yaml`) is the reproduction; the user's version replaces its
`cluster.version`, and the user's broker.conf keys are added to the master's section (the slave's when the file is
a slave's; `common` in controller mode, where no node keeps a role) unless the shipped scenario sets the key itself (its values are what makes the mechanism show within
seconds: small commitlog files, a frozen store's flush mode) or the harness sets it (ports, paths, addresses, names:
`harness.scenario.lint.key_problem`). Every key left out is named in the file's header. The text is then loaded
and linted as every scenario is (`harness.scenario.load_scenario_text`), so what is written runs as it stands.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.diagnose.ranking import Finding
from harness.scenario import SourceError, load_scenario_text
from harness.scenario.lint import key_problem, version_defaults

SCENARIOS_DIR = Path(__file__).resolve().parent.parent.parent / "scenarios"
DEFAULT_VERSION = "4.9.1"


@dataclass
class Reproduction:
    """A scenario text for one finding, with what was kept and dropped of the user's input."""

    name: str
    text: str
    version: str
    used: dict[str, str] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)


def reproduction(finding: Finding, version: str | None, conf: dict[str, str]) -> Reproduction:
    """The scenario reproducing `finding` on `version` (the shipped one's when None) with `conf`'s keys."""
    mech = finding.mechanism
    scenario, why = mech.scenario_for(conf)
    base_path = SCENARIOS_DIR / f"{scenario}.yaml"
    data = yaml.safe_load(base_path.read_text(encoding="utf-8"))
    cluster = data.setdefault("cluster", {})
    version = version or cluster.get("version") or DEFAULT_VERSION
    cluster["version"] = version
    broker = cluster.setdefault("broker", {})
    if cluster.get("mode") == "controller":  # the controller gives the roles: every broker reads broker.common
        section = "common"
    else:
        section = "slave" if conf.get("brokerRole", "").upper() == "SLAVE" else "master"
    ours = {k for part in broker.values() if isinstance(part, dict) for k in part} - {
        key for key, _, name in (*mech.scenario_below, *mech.scenario_if) if name == scenario}
    table = version_defaults(version)
    used, dropped = {}, {}
    for key, value in conf.items():
        if key in ours:
            dropped[key] = f"the reproduction sets it ({scenario})"
        elif (problem := key_problem(key, value, table, version, set(), section)) is not None:
            dropped[key] = problem.split(";")[0].split(" (")[0]
        else:
            used[key] = value
    if used:
        broker.setdefault(section, {}).update(used)
    if mech.variant is not None:  # the scenario's variant that is this mechanism, alone
        axis, name = mech.variant
        data["matrix"][axis] = [v for v in data["matrix"][axis] if str(v.get("name")) == name]
    data["name"] = f"diagnosed-{mech.id}"
    data["description"] = f"{mech.title} (RocketMQ {version}; written by rmq-chaos diagnose)"
    header = [f"Written by `rmq-chaos diagnose`: {mech.title}.",
              f"Based on scenarios/{scenario}.yaml (its comments say how it reproduces the mechanism).",
              f"Evidence: {finding.explained} of {finding.total} evidence lines: "
              + ", ".join(f"{fid} {n}" for fid, n in finding.counts.items())]
    if why:
        header.append(f"{why}: its expectations encode what the setting changes")
    header += [f"broker.conf {k} not used: {reason}" for k, reason in sorted(dropped.items())]
    body = yaml.safe_dump(data, sort_keys=False, width=120, allow_unicode=True)
    text = "".join(f"# {line}\n" for line in header) + body
    return Reproduction(data["name"], text, version, used, dropped)


def write(repro: Reproduction, out_dir: Path) -> Path:
    """Lint `repro` as every scenario is, then write it to `out_dir`; raises SourceError (one line) if it fails."""
    path = out_dir / f"{repro.name}.yaml"
    load_scenario_text(path, repro.text)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(repro.text, encoding="utf-8")
    tmp.replace(path)
    return path


__all__ = ["Reproduction", "SourceError", "reproduction", "write"]
