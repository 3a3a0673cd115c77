"""The mechanisms `rmq-chaos diagnose` knows: the incidents rmq-chaos reproduces (shared DESIGN.md's table, the
shipped scenarios, docs/fidelity.md), each with the fingerprints it explains, what the seed material says about it,
and the shipped scenario that reproduces it.

A mechanism is found when at least one of its `keys` fingerprints is; it then explains every line of its
`explains` fingerprints. `recommend` / `warn` are the seed's own advice (DESIGN.md, the scenarios' comments, the
field reports in fixtures/README.md), never new claims.

The catalog is data: mechanisms.yaml beside this module (with the comments on its entries), loaded once at import
into `MECHANISMS`, in the file's order.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.diagnose import catalog


@dataclass(frozen=True)
class Mechanism:
    """One broker or client mechanism behind an incident."""

    id: str
    title: str
    keys: tuple[str, ...]
    explains: tuple[str, ...]
    paragraph: str
    recommend: tuple[str, ...]
    warn: tuple[str, ...]
    scenario: str
    """The shipped scenario (scenarios/<name>.yaml) the written reproduction starts from."""
    scenario_below: tuple[tuple[str, int, str], ...] = ()
    """(broker.conf key, value, scenario): a broker.conf that sets the key below the value is reproduced by that
    scenario instead, whose expectations encode what the setting changes; the user's value of the key is kept."""
    scenario_if: tuple[tuple[str, str, str], ...] = ()
    """(broker.conf key, value, scenario): the same for a key set to that value (exactly: the broker's enum names)."""
    variant: tuple[str, str] | None = None
    """(matrix axis, variant name): the scenario's variant that is this mechanism; the reproduction keeps it alone."""

    def scenario_for(self, conf: dict[str, str]) -> tuple[str, str | None]:
        """The shipped scenario that reproduces this mechanism with the broker.conf `conf`, and why when it is not
        the mechanism's own."""
        for key, wanted, name in self.scenario_if:
            value = conf.get(key, "").strip()
            if value == wanted:
                return name, f"broker.conf {key}={value}: scenarios/{name}.yaml, not {self.scenario}.yaml"
        for key, limit, name in self.scenario_below:
            value = conf.get(key, "").strip()
            if value.isdigit() and int(value) < limit:
                return name, f"broker.conf {key}={value} (below {limit}): scenarios/{name}.yaml, not {self.scenario}.yaml"
        return self.scenario, None


MECHANISMS: tuple[Mechanism, ...] = catalog.load(Mechanism, "mechanisms.yaml")
BY_ID = {m.id: m for m in MECHANISMS}
