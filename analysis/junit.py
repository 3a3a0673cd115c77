"""`report/junit.xml`: one testcase per expectation, so CI systems show which expectation failed and by how much.

A failed expectation is a `<failure>` whose message names it with its measured value and limit; one that could
not be measured is an `<error>` (not a skip: an unmeasured expectation must not look green).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from analysis.verdict import FAILED, UNKNOWN, RunVerdict

SUITE_PREFIX = "rmq-chaos"


def junit_tree(verdict: RunVerdict) -> ET.ElementTree:
    counts = verdict.counts()
    suite = ET.Element("testsuite", {
        "name": f"{SUITE_PREFIX}.{verdict.scenario}",
        "tests": str(len(verdict.results)),
        "failures": str(counts[FAILED]),
        "errors": str(counts[UNKNOWN]),
        "skipped": "0",
    })
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "run_id", "value": verdict.run_id})
    ET.SubElement(props, "property", {"name": "valid", "value": str(verdict.valid).lower()})
    for r in verdict.results:
        case = ET.SubElement(suite, "testcase", {"classname": f"{SUITE_PREFIX}.{verdict.run_id}", "name": r.name})
        if r.status == FAILED:
            el = ET.SubElement(case, "failure", {"message": r.message(), "type": "ExpectationFailed"})
            el.text = r.message()
        elif r.status == UNKNOWN:
            el = ET.SubElement(case, "error", {"message": r.message(), "type": "ExpectationUnknown"})
            el.text = r.message()
        else:
            ET.SubElement(case, "system-out").text = r.message()
    root = ET.Element("testsuites", {"name": SUITE_PREFIX})
    root.append(suite)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(verdict: RunVerdict, path: Path) -> None:
    junit_tree(verdict).write(path, encoding="utf-8", xml_declaration=True)
