"""`explore/<id>/index.html`: one self-contained page to read in a browser (no scripts, no external files): the
exploration's figures, every schedule tried with its verdict and a link to its run's report, the shrinking steps
(what each tried, the runs it took, whether it still failed) and the minimal scenario file. Written again after
every run, so a reload shows how far it got."""
from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STYLE = ("body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}"
         ".fail{color:#b00;font-weight:bold}.pass{color:#070}.unknown{color:#777}pre{background:#f4f4f4;padding:1em}")


def esc(value: Any) -> str:
    return html.escape(str(value))


def verdict_cell(verdict: str) -> str:
    return f'<td class="{esc(verdict)}">{esc(verdict)}</td>'


def render(summary: Mapping[str, Any], records: list[Mapping[str, Any]], minimal_text: str | None) -> str:
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>explore {esc(summary['id'])}</title>"
           f"<style>{STYLE}</style></head><body>", f"<h1>explore {esc(summary['id'])}</h1>", "<table>"]
    for key in ("file", "scenario", "seed", "state", "runs", "explored", "failures", "discarded", "wall_s",
                "first_failure_run", "shrink_runs", "minimal"):
        if summary.get(key) is not None:
            out.append(f"<tr><th>{esc(key)}</th><td>{esc(summary[key])}</td></tr>")
    out.append("</table>")
    out.append("<h2>Schedules</h2><table><tr><th>#</th><th>stage</th><th>step</th><th>schedule</th><th>faults</th>"
               "<th>verdict</th><th>failed / why</th><th>run</th><th>cluster</th></tr>")
    for r in records:
        link = f"runs/{r['run_id']}/report/index.html" if r.get("run_id") else None
        run = f'<a href="{esc(link)}">{esc(r["run_id"])}</a>' if link else "-"
        why = ", ".join(r.get("failed") or []) or r.get("why") or ""
        out.append(f"<tr><td>{r['n']}</td><td>{esc(r['stage'])}</td><td>{esc(r.get('step') or '')}</td>"
                   f"<td>{esc(r['describe'])}</td><td>{r['faults']}</td>{verdict_cell(r['verdict'])}"
                   f"<td>{esc(why)}</td><td>{run}</td><td>{esc(r.get('cluster') or 'fresh')}</td></tr>")
    out.append("</table>")
    steps = summary.get("steps") or []
    if steps:
        out.append("<h2>Shrinking</h2><table><tr><th>step</th><th>tried</th><th>runs</th><th>still fails</th>"
                   "<th>schedule</th></tr>")
        for i, s in enumerate(steps, start=1):
            out.append(f"<tr><td>{i}</td><td>{esc(s['step'])}</td><td>{esc(', '.join(s['runs']))}</td>"
                       f"{verdict_cell('fail' if s['failing'] else 'pass')}<td>{esc(s['describe'])}</td></tr>")
        out.append("</table>")
    if minimal_text is not None:
        out.append(f"<h2>Minimal scenario (minimal.yaml)</h2><pre>{esc(minimal_text)}</pre>")
    out.append("</body></html>")
    return "\n".join(out)


def write_page(root: Path, summary: Mapping[str, Any], records: list[Mapping[str, Any]],
               minimal_text: str | None) -> Path:
    path = root / "index.html"
    tmp = root / ".index.html.tmp"
    tmp.write_text(render(summary, records, minimal_text), encoding="utf-8")
    tmp.replace(path)
    return path
