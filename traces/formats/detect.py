"""The adapter table and format detection (`--format auto`).

Detection is per file and looks only at the first records (up to `SNIFF_RECORDS`): each adapter scores a
record 2 (its defining shape is present), 1 (a real but partial sign) or 0. The file's format is the
one that some record claims with certainty, else the first plausible one in `FORMAT_NAMES` order. Two
different certain claims mean the file mixes formats; no claim at all means the format is unknown. Both
fail with an error naming the file and the line, since guessing would silently drop or misread data.
Records later in the file that do not fit are rejected one by one (and, if they clearly belong to
another format, fail as mixed).

**Closest formats.** The unknown-format error (and the note of a folder walk's skipped file) names the
two formats the records come closest to, and what each lacks (`Adapter.lacks` of the first record
looked at): `unknown format: closest are openai-chat (no message with a 'role') and flat (no 'tool'
field); pass --format`. Closeness is a partial-evidence score, deterministic: the words of the records
looked at (their keys down to four levels, and the values of their `type`, `role`, `object`, `kind` and
`key` fields; `adapter.vocabulary`) are pooled, each adapter scores the number of its `marks` among them
(`Adapter.evidence`), and the two highest scores win; ties go to the more general format, the one
later in `ADAPTERS` (priority) order, so a record with no mark of any format is said to be closest to
`flat` and `openai-chat`, the shapes a hand-made file most likely meant.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

from output_contracts.errors import TraceError
from output_contracts.traces.formats.adapter import Adapter, vocabulary
from output_contracts.traces.formats.anthropic import AnthropicAdapter
from output_contracts.traces.formats.atif import AtifAdapter
from output_contracts.traces.formats.autogen import AutoGenAdapter
from output_contracts.traces.formats.claude_code import ClaudeCodeAdapter
from output_contracts.traces.formats.codex import CodexAdapter
from output_contracts.traces.formats.crewai import CrewAIAdapter
from output_contracts.traces.formats.flat import FlatAdapter
from output_contracts.traces.formats.google_adk import GoogleAdkAdapter
from output_contracts.traces.formats.inspect_ai import InspectAIAdapter
from output_contracts.traces.formats.langsmith import LangSmithAdapter
from output_contracts.traces.formats.mini_swe_agent import MiniSweAgentAdapter
from output_contracts.traces.formats.mlflow import MlflowAdapter
from output_contracts.traces.formats.openai_agents import OpenAIAgentsAdapter
from output_contracts.traces.formats.openai_chat import OpenAIChatAdapter
from output_contracts.traces.formats.openai_responses import OpenAIResponsesAdapter
from output_contracts.traces.formats.openhands import OpenHandsAdapter
from output_contracts.traces.formats.openinference import OpenInferenceAdapter
from output_contracts.traces.formats.otel import OtelAdapter
from output_contracts.traces.formats.smolagents import SmolagentsAdapter
from output_contracts.traces.formats.swe_agent import SweAgentAdapter
from output_contracts.traces.formats.tau_bench import TauBenchAdapter

#: Every adapter by name, in detection priority order (most specific first).
ADAPTERS: dict[str, Adapter] = {
    a.name: a
    for a in (
        SmolagentsAdapter(),
        TauBenchAdapter(),
        OpenInferenceAdapter(),
        InspectAIAdapter(),
        AtifAdapter(),
        SweAgentAdapter(),
        LangSmithAdapter(),
        OpenHandsAdapter(),
        MiniSweAgentAdapter(),
        MlflowAdapter(),
        CrewAIAdapter(),
        ClaudeCodeAdapter(),
        CodexAdapter(),
        OtelAdapter(),
        OpenAIAgentsAdapter(),
        OpenAIResponsesAdapter(),
        AnthropicAdapter(),
        AutoGenAdapter(),
        GoogleAdkAdapter(),
        OpenAIChatAdapter(),
        FlatAdapter(),
    )
}


class FormatName(StrEnum):
    """The input formats `--format` takes (`auto` detects per file from its first records)."""

    auto = "auto"
    flat = "flat"
    openai_chat = "openai-chat"
    openai_responses = "openai-responses"
    anthropic = "anthropic"
    otel = "otel"
    openinference = "openinference"
    openai_agents = "openai-agents"
    tau_bench = "tau-bench"
    claude_code = "claude-code"
    codex = "codex"
    inspect_ai = "inspect-ai"
    atif = "atif"
    swe_agent = "swe-agent"
    langsmith = "langsmith"
    smolagents = "smolagents"
    autogen = "autogen"
    google_adk = "google-adk"
    openhands = "openhands"
    mini_swe_agent = "mini-swe-agent"
    mlflow = "mlflow"
    crewai = "crewai"


FORMAT_NAMES: tuple[str, ...] = tuple(f.value for f in FormatName if f is not FormatName.auto)
SNIFF_RECORDS = 32


def get_adapter(name: str) -> Adapter:
    """The adapter called `name`, or a usage error listing the known ones."""
    try:
        return ADAPTERS[name]
    except KeyError:
        raise TraceError(
            f"unknown format '{name}' (known: auto, {', '.join(FORMAT_NAMES)})", code="E_USAGE"
        ) from None


def best_match(record: Any) -> tuple[str | None, int]:
    """The first adapter (in priority order) with the highest score for `record`, and that score."""
    best: str | None = None
    score = 0
    for name, adapter in ADAPTERS.items():
        s = adapter.sniff(record)
        if s > score:
            best, score = name, s
    return best, score


def detect_records(records: Iterable[tuple[int, Any]], source: str) -> str | None:
    """Detect the format of a line-oriented file from `(line, record)` pairs of its first records.

    Returns None when there is no record to look at (an empty or all-blank file).
    """
    certain: tuple[str, int] | None = None
    plausible: tuple[str, int] | None = None
    first_line: int | None = None
    seen: list[Any] = []
    for line, rec in records:
        if first_line is None:
            first_line = line
        seen.append(rec)
        name, score = best_match(rec)
        if name is None:
            continue
        if score == 2:
            if certain is None:
                certain = (name, line)
            elif certain[0] != name:
                raise TraceError(
                    f"mixed formats: line {certain[1]} is {certain[0]}, line {line} is {name}; "
                    "split the file or pass --format",
                    code="E_FORMAT",
                    source=source,
                    line=line,
                )
        elif plausible is None:
            plausible = (name, line)
    if certain is not None:
        return certain[0]
    if plausible is not None:
        return plausible[0]
    if first_line is None:
        return None
    raise TraceError(
        f"unknown format: {closest_phrase(seen)}; pass --format",
        code="E_FORMAT",
        source=source,
        line=first_line,
    )


def closest(records: Sequence[Any], n: int = 2) -> list[tuple[str, str]]:
    """The `n` formats `records` come closest to, each with what it lacks (see the module docstring):
    highest `Adapter.evidence` of the records' pooled vocabulary first, ties to the later adapter in
    priority order (the more general format)."""
    words: frozenset[str] = frozenset().union(*(vocabulary(r) for r in records))
    ranked = sorted(enumerate(ADAPTERS.values()), key=lambda ia: (-ia[1].evidence(words), -ia[0]))
    first = records[0] if records else None
    return [(a.name, a.lacks(first) or "only a partial sign of it") for _, a in ranked[:n]]


def closest_phrase(records: Sequence[Any]) -> str:
    """`closest are X (what X lacks) and Y (what Y lacks)`, for errors and skip notes."""
    return "closest are " + " and ".join(f"{name} ({why})" for name, why in closest(records))


def detect_document(doc: Any) -> str | None:
    """The whole-file adapter that claims a parsed `.json` document, if any."""
    best: str | None = None
    score = 0
    for name, adapter in ADAPTERS.items():
        if adapter.whole_file:
            s = adapter.sniff_document(doc)
            if s > score:
                best, score = name, s
    return best
