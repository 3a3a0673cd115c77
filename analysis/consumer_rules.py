"""Which side a consumer backlog is on: the rules the run report (`analysis.consume_measures`) and
`rmq-chaos diagnose` (`harness.diagnose.render`) share, so they say the same about the same evidence.

In the order the seed reasons (issue 12's consumer-backlog incident):
1. a group on the same topic kept up while others fell behind: the broker serves the topic, so the backlog is the
   lagging groups' own (their listeners), whatever the broker's put times were;
2. otherwise, when the master's `[PAGECACHERT]` lines say at least `FAST_SHARE` of its puts took under 10 ms: the
   broker wrote fast, the lag is on the consumer side;
3. otherwise the broker's puts were not all fast: the figures are given, and neither side is named.
Without a group behind there is nothing to say; without a group that kept up and without the master's put times,
neither side can be named.

Pure Python: the report passes groups whose lag grew and those whose lag did not; diagnose passes the groups whose
client logs say "so do flow control" (logs cannot show a group that kept up)."""
from __future__ import annotations

from dataclasses import dataclass

from analysis.pagecache import FAST_SHARE

LAG_GREW = "the broker wrote in under 10 ms; the lag is on the consumer side"
KEPT_UP = "the broker serves the topic; the lag is on the consumer side"


@dataclass(frozen=True)
class Backlog:
    """What is known of a backlog: groups behind and groups that kept up (on one topic), the master's put times."""

    behind: tuple[str, ...]
    kept_up: tuple[str, ...] = ()
    puts: int | None = None
    under_10ms_share: float | None = None
    p99_upper: str | None = None
    """The upper bound of the bucket of the master's 99th-percentile put ("100 ms", "over 10 s"); None: not known."""


def sentence(b: Backlog) -> str | None:
    """The report's and diagnose's one sentence on the backlog (None: nothing to say, or neither side known)."""
    if not b.behind:
        return None
    behind = ", ".join(sorted(b.behind))
    puts = (f"{b.under_10ms_share:.1%} of the master's {b.puts} puts took under 10 ms"
            if b.puts and b.under_10ms_share is not None else None)
    if b.kept_up:
        return (f"{KEPT_UP} (group {', '.join(sorted(b.kept_up))} kept up on the same topic while the lag grew in "
                f"group {behind}" + (f"; {puts}" if puts else "") + ")")
    if puts is None:
        return None
    if b.under_10ms_share >= FAST_SHARE:
        return f"{LAG_GREW} ({puts}; lag grew in group {behind})"
    upper = f", the 99th percentile up to {b.p99_upper}" if b.p99_upper else ""
    return (f"lag grew in group {behind}; the master's puts were not all fast: {b.under_10ms_share:.1%} of "
            f"{b.puts} under 10 ms{upper}")
