"""`junit` — JUnit XML: one testsuite, one testcase per tool checked; a tool with violations fails with one
line per violation; a tool the contracts do not know is `skipped`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from typing import Any

from output_contracts.checks.outputs import Summary
from output_contracts.checks.renderers.renderer import Document, RenderOptions, message, violations


def junit(
    receipts: Iterable[Mapping[str, Any]], summary: Summary, options: RenderOptions | None = None
) -> bytes:
    """JUnit XML: one testcase per tool checked (sorted by name), failing with its violations (each at
    its relative path and file line, as SARIF places it)."""
    locator = (options or RenderOptions()).locator
    per_tool: dict[str, list[str]] = {}
    for r, v in violations(receipts):
        where = locator.locate(r.get("source"), r.get("line")).text()
        per_tool.setdefault(r["outcome_contract"]["tool"], []).append(f"{where}: {message(v)}")
    tools = sorted(set(summary.calls_by_tool) | set(per_tool))
    failures = sum(1 for t in tools if per_tool.get(t))
    skipped = sum(1 for t in tools if t in summary.unknown_tools)
    suite = ET.Element(
        "testsuite",
        {
            "name": "contracts check",
            "tests": str(len(tools)),
            "failures": str(failures),
            "errors": "0",
            "skipped": str(skipped),
        },
    )
    for t in tools:
        case = ET.SubElement(suite, "testcase", {"classname": "contracts.check", "name": t})
        msgs = per_tool.get(t, [])
        n = summary.calls_by_tool.get(t, 0)
        if msgs:
            fail = ET.SubElement(
                case, "failure", {"message": f"{len(msgs)} violations in {n} calls", "type": "contract"}
            )
            fail.text = "\n".join(msgs)
        elif t in summary.unknown_tools:
            ET.SubElement(case, "skipped", {"message": f"unknown tool: {n} calls not checked"})
        ET.SubElement(case, "system-out").text = f"{n} calls checked"
    root = ET.Element(
        "testsuites", {"name": "contracts", "tests": str(len(tools)), "failures": str(failures)}
    )
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


class Junit(Document):
    name = "junit"

    def render_all(
        self,
        receipts: Iterable[Mapping[str, Any]],
        summary: Summary,
        *,
        version: str,
        options: RenderOptions | None = None,
    ) -> bytes:
        return junit(receipts, summary, options)


FORMAT = Junit()
