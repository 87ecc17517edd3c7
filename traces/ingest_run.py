"""The state of one ingest run, between reading (which fills it) and commit (which writes it out).

`Run` owns the staging folder's contents while sources are read: the current chunk of calls
(`Columns`), the Parquet parts already flushed (every `chunk_rows` calls, so memory is bounded by the
chunk, not the input), the staged `rejects.jsonl`, and one episode-facts row per trace. Reading calls
`reject`, `add_episode` and `flush`; commit reads `parts`, `episodes` and `n_rejects`. Kept apart from
both so neither needs the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from output_contracts.errors import TraceError, reading
from output_contracts.progress import Progress
from output_contracts.traces.corpus import REJECTS_FILE
from output_contracts.traces.ingest_columns import Columns, canon
from output_contracts.traces.ingest_order import DirectLeaves, SortedRun, run_counts, write_run

#: Positions in an `episode_row` of the facts filled from a trace's later rows.
_FACTS = frozenset((1, 2, 3, 4, 7, 8, 9))


@dataclass
class Run:
    """State of one ingest run: staging folder, current chunk, rejects, episode facts."""

    out: Path
    stage: Path
    strict: bool
    chunk_rows: int
    progress: Progress
    cols: Columns = field(default_factory=Columns)
    parts: list[Path] = field(default_factory=list)  # the calls of each flushed chunk
    #: the leaves of chunks that came in task order, straight into the final file's row groups ...
    direct: DirectLeaves | None = None
    #: ... and those of later chunks, staged as sorted runs merged at commit (`ingest_order`)
    leaf_runs: list[SortedRun] = field(default_factory=list)
    rejects_fh: IO[bytes] | None = None
    n_rejects: int = 0
    episodes: list[tuple[Any, ...]] = field(default_factory=list)
    #: trace_id -> index in `episodes`. A flat file repeats its episode's facts (reward, tools) on every
    #: call; keeping one row per trace as they arrive makes this grow with traces, not calls (10M calls:
    #: peak RSS 3.7 GiB instead of more than 9 GiB, measured in docs/performance.md).
    episode_at: dict[str, int] = field(default_factory=dict)
    #: The last `tools` tuple seen and its canonical JSON: adapters hand the same tuple object to the
    #: records of an episode (the flat adapter to every record with the same list), so `is` finds it.
    #: The reference is held, so the identity cannot be reused by another tuple.
    _tools_last: tuple[tuple[str, ...], str] | None = None

    def tools_text(self, tools: tuple[str, ...]) -> str:
        """Canonical JSON of a `tools` tuple (a JSON array), reused while the same tuple comes back."""
        last = self._tools_last
        if last is not None and last[0] is tools:
            return last[1]
        text = canon(list(tools))
        self._tools_last = (tools, text)
        return text

    def add_episode(self, row: tuple[Any, ...]) -> None:
        """Keep one row per trace: its first row, null facts filled from later rows — the same
        first-non-null rule `finalize_episodes` applies, so the episodes written are unchanged."""
        at = self.episode_at.get(row[0])
        if at is None:
            self.episode_at[row[0]] = len(self.episodes)
            self.episodes.append(row)
            return
        old = self.episodes[at]
        # the common case, a flat file repeating its trace's facts on every line: nothing to fill
        if old[1:5] == row[1:5] and old[7:] == row[7:]:
            return
        # facts: task, reward, labels, tools (1-4) and the run facts trial, agent_cost, user_cost (7-9);
        # source and line (5, 6) stay the first row's
        if any(old[i] is None and row[i] is not None for i in _FACTS):
            self.episodes[at] = tuple(
                row[i] if i in _FACTS and old[i] is None else old[i] for i in range(len(old))
            )

    def reject(self, source: str, line: int, code: str, reason: str, raw: str, **extra: Any) -> None:
        """Stage one line of `rejects.jsonl`; under `strict`, fail with `E_TRACE` naming file and line."""
        if self.strict:
            raise TraceError(reason, code="E_TRACE", source=source, line=line, field=extra.get("field"))
        row = {"source": source, "line": line, "code": code, "error": reason, "raw": raw}
        row.update({k: v for k, v in extra.items() if v is not None})
        if self.rejects_fh is None:
            self.rejects_fh = open(self.stage / REJECTS_FILE, "wb")  # noqa: SIM115 (closed by close_rejects)
        self.rejects_fh.write(orjson.dumps(row, option=orjson.OPT_SORT_KEYS) + b"\n")
        self.n_rejects += 1

    def close_rejects(self) -> None:
        """Close the staged rejects file, if one was opened (idempotent)."""
        if self.rejects_fh is not None and not self.rejects_fh.closed:
            self.rejects_fh.close()

    def flush_if_full(self) -> None:
        """Flush the chunk once it holds `chunk_rows` calls."""
        if self.cols.n >= self.chunk_rows:
            self.flush()

    def flush(self) -> None:
        """Write the current chunk as one calls part and one leaves part, then start a new chunk."""
        if self.cols.n == 0:
            return
        calls, leaves = self.cols.frames()
        counts = run_counts(leaves)  # leaves come ordered by task: a sorted run
        k = len(self.parts)
        cp, lp = self.stage / f"calls-{k:05d}.parquet", self.stage / f"leaves-{k:05d}.arrows"
        if self.direct is None:
            self.direct = DirectLeaves(self.stage / "leaves-direct.parquet")
        # staging parts are read once, at commit: a cheap codec, the final files get zstd
        with reading(self.out, writing=True):  # a full disk names the corpus being written
            calls.write_parquet(cp, compression="lz4")
            if not self.direct.take(leaves, counts):
                write_run(leaves, lp)
                self.leaf_runs.append(SortedRun(lp, counts))
        self.parts.append(cp)
        self.cols.release()
        self.cols = Columns()
