"""The tool registry (DESIGN §2.4): one source for everything about a tool.

`tools.json` (or a folder of them) lists tools with their argument schema (`parameters`), declared
output contract (`output`), `substitutes` (tools that can answer the same need, offered as recovery
tools in receipts) and `immutable` argument pointers (never to be changed by a repair).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from contracts.errors import TraceError


@dataclass(frozen=True)
class ToolSpec:
    """One tool's declaration."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    output: Mapping[str, Any] | None = None
    substitutes: tuple[str, ...] = ()
    immutable: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Registry:
    """Tools by name, in declaration order."""

    tools: Mapping[str, ToolSpec]
    source: str | None = None

    def get(self, name: str) -> ToolSpec | None:
        return self.tools.get(name)

    def names(self) -> list[str]:
        return list(self.tools)


def _spec(d: Any, source: str, i: int) -> ToolSpec:
    where = f"tools[{i}]"
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise TraceError(f"{where}: every tool needs a string 'name'", source=source, field=f"{where}.name")
    known = {"name", "description", "parameters", "output", "substitutes", "immutable"}
    return ToolSpec(
        name=d["name"],
        description=d.get("description", "") or "",
        parameters=d.get("parameters") or {},
        output=d.get("output"),
        substitutes=tuple(d.get("substitutes") or ()),
        immutable=tuple(d.get("immutable") or ()),
        extra={k: v for k, v in d.items() if k not in known},
    )


def load_registry(path: str | Path) -> Registry:
    """Load `tools.json` (`{"tools": [...]}` or a bare list), or every `*.json` in a folder, merged."""
    p = Path(path)
    files = sorted(p.glob("*.json")) if p.is_dir() else [p]
    tools: dict[str, ToolSpec] = {}
    for f in files:
        try:
            data = orjson.loads(f.read_bytes())
        except FileNotFoundError as e:
            raise TraceError("registry file not found", source=str(f)) from e
        except orjson.JSONDecodeError as e:
            raise TraceError(f"registry is not valid JSON: {e}", source=str(f)) from e
        items = data.get("tools") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise TraceError(
                'registry must be {"tools": [...]} or a list of tools', source=str(f), field="tools"
            )
        for i, d in enumerate(items):
            spec = _spec(d, str(f), i)
            if spec.name in tools:
                raise TraceError(
                    f"tool '{spec.name}' declared twice", source=str(f), field=f"tools[{i}].name"
                )
            tools[spec.name] = spec
    return Registry(tools=tools, source=str(p))
