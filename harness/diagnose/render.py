"""The text `rmq-chaos diagnose` prints: per finding, its evidence, the mechanism, the advice, the scenario written."""
from __future__ import annotations

import textwrap

from analysis import consumer_rules as rules
from harness.diagnose.evidence import Evidence
from harness.diagnose.fingerprints import BY_ID
from harness.diagnose.ranking import Finding

WIDTH = 116
MAX_PLACES = 6
"""Files shown per fingerprint; the rest are counted."""


def backlog_sentence(evidence: Evidence) -> str | None:
    """What the run report would say of the same evidence (`analysis.consumer_rules`): the groups in flow control
    are behind; logs cannot show a group that kept up; the put times are the [PAGECACHERT] lines read."""
    puts = evidence.pagecache_puts
    return rules.sentence(rules.Backlog(tuple(sorted(evidence.groups_in_flow_control)), puts=puts or None,
                                        under_10ms_share=evidence.pagecache_fast_puts / puts if puts else None))


def render(findings: list[Finding], evidence: Evidence, written: dict[str, str]) -> str:
    """The report; `written` maps a mechanism id to the scenario path (or the one-line reason it was not written)."""
    out = [f"read {evidence.files_read} file(s), {evidence.bytes_read / 1e6:.1f} MB; "
           f"{evidence.total()} evidence line(s)"]
    if evidence.broker_conf_path:
        out.append(f"broker.conf: {evidence.broker_conf_path} ({len(evidence.broker_conf)} keys)")
    if not findings:
        out.append("no known mechanism: nothing in these files names one of the mechanisms rmq-chaos reproduces")
        for fid, per_file in sorted(evidence.hits.items()):
            out.append(f"  (alone, names none) {fid}: {sum(h.count for h in per_file.values())} line(s)")
        return "\n".join(out)
    for n, f in enumerate(findings, 1):
        m = f.mechanism
        share = f"{f.share:.0%}" if f.share >= 0.005 else "<1%"
        out += ["", f"{n}. {m.id}: {m.title}", f"   explains {f.explained} of {f.total} evidence lines ({share})",
                "   evidence:"]
        for fid in f.counts:
            places = [h for key, h in f.hits if key == fid]
            out.append(f"     {fid} ({BY_ID[fid].what}): {f.counts[fid]} line(s)")
            out += [f"       {h.where()}" for h in places[:MAX_PLACES]]
            if len(places) > MAX_PLACES:
                out.append(f"       ... and {len(places) - MAX_PLACES} more file(s)")
            if places:
                out.append(f"       e.g. {places[0].sample}")
        if m.id == "stuck-consumer-listener" and evidence.groups_in_flow_control:
            out.append(f"     groups in flow control: {', '.join(sorted(evidence.groups_in_flow_control))}")
        if m.id == "stuck-consumer-listener" and evidence.pagecache_puts:
            share = evidence.pagecache_fast_puts / evidence.pagecache_puts
            out.append(f"     [PAGECACHERT]: {share:.1%} of {evidence.pagecache_puts} puts under 10 ms")
        if m.id == "stuck-consumer-listener" and (said := backlog_sentence(evidence)):
            out.append(f"     so: {said}")
        why = m.scenario_for(evidence.broker_conf)[1]
        if why:
            out.append(f"   reproduced from {why}")
        out.append("   mechanism:")
        out += textwrap.wrap(m.paragraph, WIDTH, initial_indent="     ", subsequent_indent="     ")
        out.append("   the seed recommends:")
        out += [line for r in m.recommend for line in textwrap.wrap(r, WIDTH, initial_indent="     - ",
                                                                    subsequent_indent="       ")]
        out.append("   and warns against:")
        out += [line for w in m.warn for line in textwrap.wrap(w, WIDTH, initial_indent="     - ",
                                                               subsequent_indent="       ")]
        out.append(f"   reproduction: {written.get(m.id, 'not written')}")
    return "\n".join(out)
