"""The adapter table and format detection (`--format auto`).

Detection is per file and looks only at the first records (up to `SNIFF_RECORDS`): each adapter scores a
record 2 (certainly mine), 1 (plausibly) or 0. The file's format is the one that some record claims with
certainty, else the first plausible one in `FORMAT_NAMES` order. Two different certain claims mean the
file mixes formats; no claim at all means the format is unknown. Both fail with an error naming the file
and the line, since guessing would silently drop or misread data. Records later in the file that do not
fit are rejected one by one (and, if they clearly belong to another format, fail as mixed).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from output_contracts.errors import TraceError
from output_contracts.traces.formats.adapter import Adapter
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
    for line, rec in records:
        if first_line is None:
            first_line = line
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
        f"unknown format: no record in the first {SNIFF_RECORDS} lines looks like any of "
        f"{', '.join(FORMAT_NAMES)}; pass --format to force one",
        code="E_FORMAT",
        source=source,
        line=first_line,
    )


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
