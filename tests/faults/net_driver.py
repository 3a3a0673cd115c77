"""Runs network faults inside a test host's network namespace, as the host agent would on its host: reads one JSON
line on stdin (`{"state": dir, "target": NodeTarget JSON, "faults": [{"kind", "params", "id"}], "verify": bool,
"hold": bool}`), applies (and verifies) each fault, printing one JSON line per fault (`apply`, `verify` evidence, or
`error` and `message`), then `{"ready": true}`. With `hold` it then waits for a line on stdin and reverts what it
applied (one JSON line each, `revert` evidence or `error`).

    ip netns exec <ns> python tests/faults/net_driver.py < spec.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from faults.errors import FaultError  # noqa: E402
from faults.journal import Journal  # noqa: E402
from faults.registry import fault_class  # noqa: E402
from faults.target import NodeTarget  # noqa: E402


def say(obj: dict) -> None:
    print(json.dumps(obj, default=str), flush=True)


def main() -> int:
    spec = json.loads(sys.stdin.readline())
    journal = Journal(spec["state"])
    target = NodeTarget.from_json(spec["target"], journal)
    applied = []
    for f in spec["faults"]:
        out: dict = {"fault_id": f["id"]}
        try:
            fault = fault_class(f["kind"])(target, f.get("params"), journal=journal, fault_id=f["id"])
            out["apply"] = fault.apply()
            out["entry_id"] = fault.entry_id
            applied.append(fault)
            if spec.get("verify", True):
                out["verify"] = fault.verify()
        except FaultError as e:
            out.update(error=type(e).__name__, message=str(e), evidence=getattr(e, "evidence", None))
        say(out)
    say({"ready": True})
    if not spec.get("hold"):
        return 0
    sys.stdin.readline()
    for fault in reversed(applied):
        try:
            say({"fault_id": fault.fault_id, "revert": fault.revert()})
        except FaultError as e:
            say({"fault_id": fault.fault_id, "error": type(e).__name__, "message": str(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
