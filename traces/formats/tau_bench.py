"""`tau-bench`: τ-bench and τ²-bench result files (github.com/sierra-research/tau-bench, tau2-bench).

τ-bench: a `.json` file holding one array of runs `{task_id, reward, info, traj, trial}` (or the same runs
one a line). `traj` is OpenAI chat messages; `trace_id` = `{task_id}-{trial}`, `task_id` = the task's id
as text, `reward` = the run's reward. A tool message whose content starts with `Error:` is what τ-bench
tools return on failure: the call becomes `status: "error"` with that text as `error` and no result.

τ²-bench: a `.json` file holding `{info, tasks, simulations[]}` (or simulations one a line). Messages
carry `tool_calls[{id, name, arguments (an object), requestor}]` on assistant *and* user messages (the
simulated user operates its own device tools); they join `{role: "tool", id, content, error}` messages
by `id`. Calls requested by the user are kept: `requestor` goes to the call's `meta`. `error: true`
makes a `status: "error"` call. `trace_id` = the simulation `id`, `task_id` its `task_id`, `reward` =
`reward_info.reward`, and the visible tools are `info.environment_info.tool_defs` when recorded.

A τ² simulation with assistant messages but no tool call gives an `R_NO_CALLS` reject line, never a
silent ok; its episode (and reward) is kept with 0 calls. τ²-bench's directory layout (`results.json` + `simulations/<id>.json`): the
results index holds no simulation and is skipped with a note (`skip_note`); each simulation file is one
record. Streaming (voice) simulations hold `ticks[]` instead of `messages` (`_tau2_ticks`).
Run facts kept on the episode: `trial` (both), the user simulator's cost `info.user_cost` (τ-bench) and
`agent_cost` / `user_cost` (τ²-bench), for `contracts compare`.

Whole-file accounting: a record is one run (τ-bench) or one simulation (τ²-bench), numbered from 1 in
file order; that number is the `line` of its calls and rejects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from output_contracts.traces.formats.adapter import (
    R_NO_CALLS,
    Adapter,
    Answers,
    DroppedCall,
    Parsed,
    RecordContext,
    RecordError,
    answered_call,
    list_of_dicts,
    optional_reward,
    parse_arguments,
    require_str,
    run_facts,
    tool_names,
)
from output_contracts.traces.formats.openai_chat import chat_calls  # `Error:` outputs become errors there
from output_contracts.traces.records import Episode, ToolCall


@dataclass(frozen=True)
class _Simulation:
    """A τ² simulation with the tool set its file's `info` declares."""

    sim: dict[str, Any]
    tools: tuple[str, ...] | None


def _tau2_tools(info: Any) -> tuple[str, ...] | None:
    if not isinstance(info, dict):
        return None
    env = info.get("environment_info")
    defs = env.get("tool_defs") if isinstance(env, dict) else None
    if isinstance(defs, dict):
        return tuple(str(k) for k in defs)
    return tool_names(defs)


def _results_index(doc: Any) -> bool:
    """τ²-bench's directory layout: `results.json` holds `info` and `tasks`, the simulations are files."""
    return (
        isinstance(doc, dict)
        and "simulations" not in doc
        and isinstance(doc.get("tasks"), list)
        and isinstance(doc.get("info"), dict)
        and ("user_info" in doc["info"] or "environment_info" in doc["info"])
    )


def _silent_agent(sim: dict[str, Any], parsed: Parsed) -> bool:
    """A τ² simulation whose agent spoke (an assistant message) and made no call, kept or dropped."""
    if parsed.calls or parsed.dropped:
        return False
    msgs = sim.get("messages")
    return isinstance(msgs, list) and any(isinstance(m, dict) and m.get("role") == "assistant" for m in msgs)


def _acted(sim: dict[str, Any], parsed: Parsed) -> Parsed:
    """`parsed`, with an `R_NO_CALLS` reject for a simulation with agent activity and no call (never a
    silent ok). The episode itself is kept: its reward is an outcome (`contracts compare` pairs episodes
    by task, and an agent that never called a tool is still a run that completed or failed)."""
    if _silent_agent(sim, parsed):
        why = f"simulation '{sim.get('id')}' has assistant messages but no tool call"
        return Parsed((), parsed.episodes, [DroppedCall(0, why, {"id": sim.get("id")}, R_NO_CALLS)])
    return parsed


class TauBenchAdapter(Adapter):
    """τ-bench runs and τ²-bench simulations, whole-file or one a line."""

    name = "tau-bench"
    whole_file = True

    marks = frozenset({"traj", "task_id", "reward_info", "simulations", "ticks", "reward", "trial"})

    def lacks(self, record: Any) -> str | None:
        if self.sniff(record) == 2:
            return None
        return "no 'traj' with 'task_id', 'simulations' list or 'messages' with 'reward_info'"

    def sniff(self, record: Any) -> int:
        if not isinstance(record, dict):
            return 0
        if "traj" in record and "task_id" in record:
            return 2
        if isinstance(record.get("messages"), list) and "reward_info" in record:
            return 2
        if isinstance(record.get("simulations"), list):
            return 2
        if isinstance(record.get("ticks"), list) and "task_id" in record:
            return 2
        return 2 if _results_index(record) else 0

    def sniff_document(self, doc: Any) -> int:
        if isinstance(doc, list):
            return 2 if doc and isinstance(doc[0], dict) and "traj" in doc[0] else 0
        if isinstance(doc, dict) and isinstance(doc.get("simulations"), list):
            return 2
        if _results_index(doc):
            return 2
        return self.sniff(doc)

    def skip_note(self, doc: Any) -> str | None:
        if _results_index(doc):
            return "τ²-bench results index: its simulations are files in simulations/"
        return None

    def records(self, doc: Any) -> Iterator[Any]:
        if isinstance(doc, list):
            yield from doc
        elif isinstance(doc, dict) and isinstance(doc.get("simulations"), list):
            tools = _tau2_tools(doc.get("info"))
            for sim in doc["simulations"]:
                yield _Simulation(sim, tools) if isinstance(sim, dict) else sim
        else:
            yield doc

    def parse(self, record: Any, ctx: RecordContext) -> Parsed:
        if isinstance(record, _Simulation):
            if "messages" not in record.sim and isinstance(record.sim.get("ticks"), list):
                return self._tau2_ticks(record.sim, ctx)
            return _acted(record.sim, self._tau2(record.sim, record.tools, ctx))
        if not isinstance(record, dict):
            raise RecordError(f"record is not a JSON object ({type(record).__name__})")
        if "traj" in record:
            return self._tau1(record, ctx)
        if "messages" in record:
            return _acted(record, self._tau2(record, None, ctx))
        if isinstance(record.get("ticks"), list):
            return self._tau2_ticks(record, ctx)
        if isinstance(record.get("simulations"), list):
            return self._tau2_file(record, ctx)
        raise RecordError("neither a τ-bench run (no 'traj') nor a τ²-bench simulation (no 'messages')")

    def _tau2_file(self, doc: dict[str, Any], ctx: RecordContext) -> Parsed:
        """A whole τ²-bench results object met as one line (a minified file): all its simulations."""
        calls: list[ToolCall] = []
        episodes: list[Episode] = []
        dropped: list[DroppedCall] = []
        tools = _tau2_tools(doc.get("info"))
        for k, sim in enumerate(doc["simulations"]):
            if not isinstance(sim, dict):
                raise RecordError(f"'simulations[{k}]' is not an object", field=f"simulations[{k}]")
            p = self._tau2(sim, tools, ctx, offset=len(calls) + len(dropped))
            if _silent_agent(sim, p):
                why = f"simulation '{sim.get('id')}' has assistant messages but no tool call"
                p = Parsed(
                    (),
                    p.episodes,
                    [DroppedCall(len(calls) + len(dropped), why, {"id": sim.get("id")}, R_NO_CALLS)],
                )
            calls.extend(p.calls)
            episodes.extend(p.episodes)
            dropped.extend(p.dropped)
        return Parsed(calls, episodes, dropped)

    def _tau2_ticks(self, sim: dict[str, Any], ctx: RecordContext) -> Parsed:
        """A simulation of τ²-bench's streaming (voice, full-duplex) mode: `ticks[]`, each with an
        `agent_chunk` and a `user_chunk` message. Chunks carrying `tool_calls`, and tool messages in a
        tick's lists, are read as the messages of `_tau2`; a simulation where the agent acted (a chunk
        with speech or content) but no call was made is rejected as `R_NO_CALLS`, saying so."""
        messages: list[dict[str, Any]] = []
        spoke = 0
        for tick in sim["ticks"]:
            if not isinstance(tick, dict):
                continue
            for key, value in tick.items():
                if isinstance(value, dict) and value.get("role"):
                    if value.get("tool_calls") or value.get("role") == "tool":
                        messages.append(value)
                    if key == "agent_chunk" and (value.get("contains_speech") or value.get("content")):
                        spoke += 1
                elif isinstance(value, list):
                    messages.extend(v for v in value if isinstance(v, dict) and v.get("role") == "tool")
        parsed = self._tau2({**sim, "messages": messages}, None, ctx)
        if spoke and not parsed.calls and not parsed.dropped:
            raise RecordError(
                f"simulation '{sim.get('id')}' ({sim.get('mode', 'streaming')} mode, {len(sim['ticks'])} ticks, "
                f"{spoke} with agent speech) holds no tool call",
                code=R_NO_CALLS,
            )
        return parsed

    def _tau1(self, run: dict[str, Any], ctx: RecordContext) -> Parsed:
        task = require_str(run, "task_id")
        trial = run.get("trial")
        trace_id = f"{task}-{trial}" if trial is not None else task
        traj = list_of_dicts(run, "traj")
        calls, dropped = chat_calls(traj, trace_id=trace_id, task_id=task, ctx=ctx, field="traj")
        info = run.get("info")
        _, _, user_cost = run_facts(info) if isinstance(info, dict) else (None, None, None)
        ep = Episode(
            trace_id=trace_id,
            task_id=task,
            reward=optional_reward(run),
            trial=run_facts(run)[0],
            user_cost=user_cost,
        )
        return Parsed(calls, [ep], dropped)

    def _tau2(
        self, sim: dict[str, Any], tools: tuple[str, ...] | None, ctx: RecordContext, offset: int = 0
    ) -> Parsed:
        trace_id = require_str(sim, "id")
        task = require_str(sim, "task_id")
        messages = list_of_dicts(sim, "messages")
        answers = Answers()
        for pos, m in enumerate(messages):
            if m.get("role") == "tool" and isinstance(m.get("id"), str):
                answers.add(m["id"], pos, m)
        calls: list[ToolCall] = []
        dropped: list[DroppedCall] = []
        index = offset
        for mi, m in enumerate(messages):
            tcs = m.get("tool_calls")
            if m.get("role") == "tool" or not isinstance(tcs, list):
                continue
            for ti, tc in enumerate(tcs):
                where = f"messages[{mi}].tool_calls[{ti}]"
                if not isinstance(tc, dict) or not isinstance(tc.get("name"), str):
                    raise RecordError(f"'{where}.name' is missing", field=f"{where}.name")
                args = parse_arguments(tc.get("arguments"), field=f"{where}.arguments")
                requestor = tc.get("requestor") or m.get("role")
                answer = answers.take(tc.get("id"), mi)
                if answer is None:
                    dropped.append(
                        DroppedCall(
                            index, f"tool call '{tc.get('id')}' ({tc['name']}) has no tool message", tc
                        )
                    )
                    index += 1
                    continue
                calls.append(
                    answered_call(
                        ctx,
                        trace_id=trace_id,
                        task_id=task,
                        tool=tc["name"],
                        arguments=args,
                        content=answer.get("content"),
                        failed=answer.get("error") is True,
                        step=len(calls),
                        index=index,
                        started_at=m.get("timestamp") if isinstance(m.get("timestamp"), str) else None,
                        meta={"requestor": requestor},
                    )
                )
                index += 1
        trial, agent_cost, user_cost = run_facts(sim)
        reward_info = sim.get("reward_info")
        reward = optional_reward(reward_info, where="reward_info.") if isinstance(reward_info, dict) else None
        ep = Episode(
            trace_id=trace_id,
            task_id=task,
            reward=reward,
            tools=tools,
            trial=trial,
            agent_cost=agent_cost,
            user_cost=user_cost,
        )
        return Parsed(calls, [ep], dropped)
