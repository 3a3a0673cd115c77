"""The runs of a scenario file a benchmark makes one by one (benchmarks/java_vs_python_outcomes.py): which runs of
its matrix to make (`--variant`), a scenario file of one run of the matrix (what `rmq-chaos cluster up` takes), its
directory name, and a snapshot of the scenario as it is when the batch starts."""
from __future__ import annotations

import re
from pathlib import Path


def pick_variants(scenario_path: str, wanted: list[str], parser) -> list[str | None]:
    """The matrix runs to make: the full names of those `wanted` names (full, `key=value` or the value), default
    every run; [None] for a scenario without a matrix."""
    from harness.scenario import load_scenarios

    names = [s.name for s in load_scenarios(scenario_path)]
    if len(names) == 1 and "." not in names[0]:
        if wanted:
            parser.error(f"--variant: {scenario_path} has no matrix")
        return [None]
    if not wanted:
        return names
    picked = []
    for w in wanted:
        found = [n for n in names if n == w or n.endswith("." + w) or n.split("=")[-1] == w]
        if len(found) != 1:
            parser.error(f"--variant {w}: {'ambiguous' if found else 'no such run'}; allowed: {', '.join(names)}")
        picked.append(found[0])
    return picked


def variant_value(variant: str) -> str:
    """`slave-readonly-two-groups.retry_not_store_ok=off` -> `off` (for directory names)."""
    return re.sub(r"[^A-Za-z0-9_.=-]", "_", variant.split("=")[-1] if "=" in variant else variant.split(".")[-1])


def variant_file(scenario_path: str, variant: str | None, run_dir: Path) -> str:
    """A scenario file of the one run `variant` of the scenario's matrix (`rmq-chaos cluster up` takes a scenario of
    one run), written into the run directory; the scenario itself when `variant` is None."""
    import yaml

    from harness.scenario.matrix import expand
    from harness.scenario.reader import load_marked

    if variant is None:
        return scenario_path
    data, marks = load_marked(scenario_path)
    combo = next(c for c in expand(data, marks) if c.data["name"] == variant)
    doc = dict(combo.data, name=data["name"])
    path = run_dir / "scenario-variant.yaml"
    path.write_text(f"# {variant}\n" + yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def snapshot_scenario(path: Path, batch: Path) -> dict[str, str]:
    """The scenario as it is now (others may edit the file meanwhile), and a copy whose probe shares the flood's
    client instance (`instance: flood`) for the python-shared runs."""
    import yaml

    own = batch / "scenario.yaml"
    own.write_text(path.read_text())
    data = yaml.safe_load(own.read_text())
    for client in data["load"]["clients"]:
        if client["name"] == "probe":
            client["instance"] = "flood"
    shared = batch / "scenario-probe-shares-flood-instance.yaml"
    shared.write_text(yaml.safe_dump(data, sort_keys=False))
    return {"own": str(own), "shared": str(shared)}
