"""`rmq-chaos explore`: random fault schedules drawn from a fault space with a seed, each run as an ordinary scenario
(`harness.runner.Runner`) and judged by invariants; a failing schedule is shrunk to the smallest one that still fails
k of n runs and written as a plain scenario file (`minimal.yaml`) whose expectation is the invariant it breaks.
docs/explore.md is the user's guide.

The modules, in the order an exploration goes through them:

- `spec`: the explore file's schema (pydantic): the scenario it refers to, `override:`, and `explore:` (the fault
  space, windows, rates, budget, seed, k of n, invariants, the file's own expectations).
- `load`: reading an explore file, checking the space against the scenario's cluster; one-line errors.
- `schedule`: a schedule (windows of faults) and the scenario it becomes.
- `draw`: schedule i of a seed, drawn with `random.Random(f"{seed}:{i}")`.
- `invariants`: the built-in invariants as expectations; a run's verdict (pass, fail, unknown = discarded).
- `shrink`: candidates of a failing schedule, the k-of-n rule, greedy shrinking.
- `loop`: the runs one after another, the output directory; `progress`: the terminal; `page`: index.html.
"""
