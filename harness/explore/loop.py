"""The exploration, one run after another: draw schedule i of the seed, turn it into a scenario, run it as `rmq-chaos
run` does (`harness.runner.Runner`: a cluster of its own per run, load, faults, read-back, cluster down, the Spark
analysis), judge it by the invariants; a failure is confirmed (k of n) and shrunk (`harness.explore.shrink`) and the
smallest failing schedule written as `minimal.yaml`. Stops at the first confirmed failure, when the budget (runs
explored, wall time) is spent, or at Ctrl-C/SIGTERM (the run in progress winds down as `run` does).

`explore/<id>/`: `schedules.jsonl` (one line per run: stage, step, schedule, verdict, failed invariants, run id),
`runs/<run-id>/` (each run directory), `index.html` (`page`), `summary.json`, `minimal.yaml`."""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.explore.draw import draw
from harness.explore.invariants import FAIL, UNKNOWN, Judgement, judge, only
from harness.explore.load import Exploration
from harness.explore.page import write_page
from harness.explore.progress import ExploreRunProgress, Tally
from harness.explore.schedule import Schedule, to_scenario, to_yaml
from harness.explore.shrink import Shrunk, Trial, k_of_n, shrink
from harness.scenario import SourceError

EXIT_NONE, EXIT_FOUND, EXIT_STOPPED = 0, 1, 2


class Stop(Exception):
    """The budget is spent (`why`) or the user stopped the exploration."""

    def __init__(self, why: str, interrupted: bool = False) -> None:
        super().__init__(why)
        self.interrupted = interrupted


@dataclass
class Outcome:
    code: int
    root: Path
    minimal: Path | None
    why: str


class Explorer:
    def __init__(self, ex: Exploration, root: Path, *, prepare: Callable[[Any], Any] = lambda s: s,
                 state_dir: str | Path | None = None, say: Callable[[str], None] | None = None) -> None:
        self.ex = ex
        self.root = root
        self.prepare = prepare
        """applied to each scenario before it runs (the CLI's --backend/--program)"""
        self.state_dir = state_dir
        self.say = say or (lambda text: print(text, file=sys.stderr))
        budget = ex.space.budget
        self.tally = Tally(budget.runs, budget.time, time.monotonic())
        self.records: list[dict[str, Any]] = []
        from harness.cluster_reuse import HeldCluster

        self.held = HeldCluster() if ex.space.cluster == "reuse" else None
        """explore.cluster reuse: the cluster kept between runs (taken down when the exploration ends)"""
        self.summary: dict[str, Any] = {"id": root.name, "file": str(ex.source), "scenario": str(ex.scenario_path),
                                        "seed": ex.space.seed, "state": "exploring", "steps": []}
        self.minimal_text: str | None = None

    # --- the exploration ------------------------------------------------------------------------------------------

    def run(self) -> Outcome:
        (self.root / "runs").mkdir(parents=True, exist_ok=True)
        self._publish()
        try:
            code, why, minimal = self._explore()
        except Stop as stop:
            code, minimal = (EXIT_STOPPED if stop.interrupted else EXIT_NONE), None
            why = str(stop) if stop.interrupted else f"no failure within the budget: {stop}"
        finally:
            if self.held is not None:
                self.held.down(self.say)
        self.summary["state"] = why
        self._publish()
        self.say(f"explore {self.root.name}: {why}; {self.tally.line()}")
        self.say(f"explore page: {self.root / 'index.html'}")
        return Outcome(code, self.root, minimal, why)

    def _explore(self) -> tuple[int, str, Path | None]:
        space, t = self.ex.space, self.tally
        index = 0
        while t.explored < space.budget.runs:
            self._time_left()
            schedule = draw(space, index)
            t.stage, t.trying = "exploring", f"schedule {index}"
            j = self._run(schedule, "explore", f"s{index}", None)
            t.explored += 1
            if j.verdict == FAIL:
                t.failures += 1
                target = frozenset(j.failed)
                self.summary.setdefault("first_failure_run", t.runs)
                if self._confirmed(schedule, index, target):
                    return self._shrink(schedule, index, target)
            index += 1
        return EXIT_NONE, f"no failure in {t.explored} schedules (budget runs {space.budget.runs})", None

    def _confirmed(self, schedule: Schedule, index: int, target: frozenset[str]) -> bool:
        """The first failure counts as one of n; the other n - 1 runs must bring k - 1 more."""
        k, n = self.ex.space.rerun.k, self.ex.space.rerun.n
        if k == 1:
            return True
        self.tally.stage, self.tally.trying = "confirming", f"schedule {index} ({k} of {n})"
        trial = k_of_n(lambda: self._run(schedule, "confirm", f"s{index}", None), k - 1, n - 1, target)
        if not trial.failing:
            self.say(f"schedule {index} failed once but not {k} of {n} times: flaky, not shrunk; exploring on")
        return trial.failing

    def _shrink(self, schedule: Schedule, index: int, target: frozenset[str]) -> tuple[int, str, Path | None]:
        t, budget = self.tally, self.ex.space.budget
        t.stage = "shrinking"
        self.summary["state"] = "shrinking"

        def trial(step: str, cand: Schedule, target: frozenset[str]) -> Trial | None:
            t.shrink_step += 1
            t.trying = step
            try:
                def once() -> Judgement:
                    if t.shrink_runs >= budget.shrink_runs:
                        raise Stop(f"shrink runs spent ({budget.shrink_runs})")
                    t.shrink_runs += 1
                    return self._run(cand, "shrink", f"s{index}-k{t.shrink_step}", step)
                result = k_of_n(once, self.ex.space.rerun.k, self.ex.space.rerun.n, target)
            except Stop as stop:
                if stop.interrupted:
                    raise
                t.shrink_step, t.trying = t.shrink_step - 1, ""
                self.say(f"shrinking stops: {stop}")
                return None
            self.summary["steps"].append({"step": step, "failing": result.failing, "describe": cand.describe(),
                                          "runs": [r.verdict for r in result.runs]})
            self.say(f"shrinking step {t.shrink_step}: {step}: " + ("still fails" if result.failing else "passes"))
            return result

        shrunk = shrink(schedule, target, self.ex.space, trial)
        path = self._write_minimal(shrunk, index)
        self.summary["shrink_runs"] = t.shrink_runs
        self.summary["minimal"] = str(path)
        how = "minimal" if shrunk.complete else "smallest found before the budget ran out"
        return EXIT_FOUND, (f"failure found ({', '.join(sorted(shrunk.failed))}); shrunk to "
                            f"{shrunk.schedule.fault_count} fault(s) in {t.shrink_runs} runs ({how}): {path}"), path

    def _time_left(self) -> None:
        left = self.tally.left_s()
        if left is not None and left <= 0:
            raise Stop(f"time budget spent ({self.ex.space.budget.time:g}s)")

    # --- one run --------------------------------------------------------------------------------------------------

    def _run(self, schedule: Schedule, stage: str, label: str, step: str | None) -> Judgement:
        from harness.qualify import isolate_for
        from harness.qualify_run import read_verdict
        from harness.runner import STATUS_INTERRUPTED, Runner

        self._time_left()
        t = self.tally
        t.runs += 1
        name = f"{self.ex.name}-{label}"
        record: dict[str, Any] = {"n": t.runs, "stage": stage, "step": step, "label": label,
                                  "schedule": schedule.to_json(), "describe": schedule.describe(),
                                  "faults": schedule.fault_count}
        self.say(f"explore run {t.runs} ({stage} {label}{': ' + step if step else ''}): {schedule.describe()}")
        started = time.monotonic()
        try:
            scenario = self.prepare(self.ex.scenario(schedule, name))
        except SourceError as err:  # a drawn combination the schema refuses: nothing ran
            j = Judgement(UNKNOWN, why=err.one_line())
            result = None
        else:
            isolate_for(scenario)
            progress = ExploreRunProgress(name, scenario.total_s, t)
            result = Runner(scenario, self.root / "runs", state_dir=self.state_dir, progress=progress,
                            held=self.held).run()
            j = judge(result.status, result.error, read_verdict(result.run_dir))
        if j.verdict == UNKNOWN:
            t.discarded += 1
        record.update({"verdict": j.verdict, "failed": list(j.failed), "unknown": list(j.unknown), "why": j.why,
                       "run_id": result.run_dir.name if result else None, "wall_s": round(time.monotonic() - started, 1),
                       "cluster": self.held.note if self.held is not None and result is not None else None})
        self.records.append(record)
        with (self.root / "schedules.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        self.say(f"explore run {t.runs}: {j.verdict}" + (f" ({j.why})" if j.why else ""))
        self._publish()
        if result is not None and result.status == STATUS_INTERRUPTED:
            raise Stop(f"stopped ({result.error})", interrupted=True)
        return j

    # --- output ---------------------------------------------------------------------------------------------------

    def _write_minimal(self, shrunk: Shrunk, index: int) -> Path:
        ex = self.ex
        expect = only(ex.data(shrunk.schedule, "x")["expect"], set(shrunk.failed))
        name = f"{ex.name}-minimal"
        data = ex.data(shrunk.schedule, name, expect)
        data["description"] = (f"found by rmq-chaos explore {self.root.name} (seed {ex.space.seed}, schedule {index}), "
                               f"shrunk in {self.tally.shrink_runs} runs; fails {', '.join(sorted(shrunk.failed))}")
        text = to_yaml(data)
        path = self.root / "minimal.yaml"
        to_scenario(str(path), data)  # what is written validates as a scenario (raises SourceError if not)
        head = (f"# The smallest failing schedule of rmq-chaos explore {self.root.name} ({ex.source}).\n"
                f"# Run it again: rmq-chaos run {self.root / 'minimal.yaml'}\n")
        path.write_text(head + text, encoding="utf-8")
        self.minimal_text = head + text
        return path

    def _publish(self) -> None:
        t = self.tally
        self.summary.update({"runs": t.runs, "explored": t.explored, "failures": t.failures,
                             "discarded": t.discarded, "wall_s": round(t.elapsed_s(), 1)})
        (self.root / "summary.json").write_text(json.dumps(self.summary, indent=1), encoding="utf-8")
        write_page(self.root, self.summary, self.records, self.minimal_text)
