"""The control node's lease renewals to a host agent go on when the agent is slow to answer (still starting, or a
loaded host): here an "agent" that never answers. Each renewal used to wait for its answer, and the first one not
answered within the lease ended the renewals for good, so a live agent gave up its lease (seen on a loaded machine:
`no word from the control node within the lease (10 s)` while the run was setting up the next host)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from waiting import poll  # noqa: E402

from harness.hosts.agent_client import AgentClient  # noqa: E402

SILENT_AGENT = """\
import sys
with open(sys.argv[1], "a", encoding="utf-8") as seen:
    for line in sys.stdin:
        seen.write(line)
        seen.flush()
"""


class LocalChannel:
    """What AgentClient needs of an SshHost: a name and a channel, here a local process."""

    def __init__(self, seen: Path) -> None:
        self.host = SimpleNamespace(name="silent")
        self.seen = seen

    def popen(self, command: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("stdin", subprocess.PIPE)
        kw.setdefault("stdout", subprocess.PIPE)
        return subprocess.Popen([sys.executable, "-c", SILENT_AGENT, str(self.seen)], **kw)


def test_renewals_go_on_while_the_agent_does_not_answer(tmp_path: Path) -> None:
    seen = tmp_path / "seen.jsonl"
    seen.touch()
    client = AgentClient(LocalChannel(seen), sys.executable, str(tmp_path), lease_s=0.4)
    client.start()
    try:
        poll(lambda: seen.read_text(encoding="utf-8").count('"renew"') >= 6, timeout_s=60,
             what="six renewals to an agent that answers none")
        assert client.alive
    finally:
        client.close()
