"""How a property code is evaluated: the interface each code folder's `check.py` implements.

A `Check` is a code's spec (`output_contracts.codes.spec.Code`) with its evaluations: per call, in plain
Python over the call's indexed nodes (`find`, or `group` for rules that share work), and vectorised, in
polars over the hits of a corpus's leaves joined to the rule operands (`vectorised`, or, for a per-node
code, `keep` inside the join). The engine (`output_contracts.codes.engine`) drives them through the
registry (`output_contracts.codes.table.checks`) and never reaches into a code's own names; a property test
holds the evaluations to the same answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import polars as pl

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.hits import HIT_COLS, OpRow, RuleEntry
from output_contracts.codes.nodes import GroupFinder, Nodes, Operand, PathFinder
from output_contracts.codes.spec import Code
from output_contracts.codes.violation import Violation

if TYPE_CHECKING:
    from output_contracts.codes.engine.compiled import ToolBuilder
    from output_contracts.traces.call_texts import CallTexts
    from output_contracts.traces.corpus import Corpus


class Check(Code):
    """One property code's evaluations. Defaults: operands are the rule's paths; the per-call finder
    calls `paths`; the vectorised side reads one hit per (rule, operand); no per-node prefilter
    (`node_class` 0)."""

    #: Per-node codes are judged inside the join of leaves to operands (`keep`): a class number > 0.
    node_class: ClassVar[int] = 0
    #: A per-node code whose `keep` reads only `kbit` and its operand row's columns (not the leaf's
    #: value): the corpus pass judges it once per distinct (pattern, kind) of a batch.
    keep_by_kind: ClassVar[bool] = False
    #: A per-node code whose operand rows with these `tmask` values break only on a number outside
    #: magnitude bounds (`|num| > hi`, or `0 < num < lo`): on a pass where every call has checker key
    #: 0, the corpus pass first keeps the leaves outside their pattern's envelope of those rows (the
    #: least `hi`, the greatest `lo`), read from dense per-pattern arrays, and joins only those.
    envelope_tmasks: ClassVar[tuple[int, ...]] = ()
    #: The hit columns `vectorised` reads (a subset of HIT_COLS): the corpus pass gathers only these
    #: from the join of leaves to operands (a column not read is a column not copied per hit).
    hit_cols: ClassVar[tuple[str, ...]] = tuple(HIT_COLS)

    def operands(self, rule: Rule) -> list[Operand]:
        """The (side, pattern) places the rule reads, in the order its evaluations number them."""
        return [Operand.of(p) for p in rule.paths]

    # --- one call

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        """Concrete paths (rule notation) where `rule` is broken, given the call's indexed nodes."""
        raise NotImplementedError

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        """`paths` specialised once for one rule (the per-call hot path)."""
        return lambda nodes: self.paths(rule, nodes, ops)

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        """Add rule `ri` (its operands `ops`) to the compiled checker of its tool (`b`: the places the
        walk tests inline, the lines after it; `output_contracts.codes.engine.compiled`), with the same
        answers as `find`; False leaves it to `find`, run on the nodes the walk collects for it."""
        return False

    def group(self, rules: Sequence[tuple[Rule, Sequence[Operand]]]) -> list[GroupFinder] | None:
        """Per-call finders for several rules of one tool at once, or None: one `find` per rule.

        A code whose rules share work per call (one lookup of a parent object serving every key
        required in it) groups them here; each finder returns (rule, concrete path) pairs."""
        return None

    # --- a corpus

    def op_rows(self, entries: Sequence[RuleEntry]) -> list[OpRow]:
        """The operand rows of this code's rules (default: one per rule and operand)."""
        return [
            OpRow(e.k, e.rule.tool, op.side, op.pattern, e.ridx, i)
            for e in entries
            for i, op in enumerate(e.ops)
        ]

    def node_mask(self, rule: Rule) -> int:
        """A per-rule integer the per-node prefilter reads (`tmask`: a kind mask, a kind of bound)."""
        return 0

    def node_bounds(self, rule: Rule) -> tuple[float | None, float | None]:
        """Two per-rule numbers the per-node prefilter reads (`lo`, `hi`: a rule's bounds)."""
        return (None, None)

    def keep(self) -> pl.Expr:
        """For a per-node code: whether a hit breaks its rule (reads kbit, num, tmask)."""
        raise NotImplementedError

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        """Violations (cid, ridx, path, present) of this code's `entries` among `hits` (its `hit_cols`, the
        leaves matching this code's operand rows; per-node codes' hits are already only the breaking
        ones) and `lean` (cid, ridx, aux of the leaves matching its lean rows)."""
        raise NotImplementedError


class NodeCheck(Check):
    """A one-path code whose per-call finder (`find`) is its evaluation: `paths` runs it, and `at` gives
    the finder its node key and how its paths are written (`$args` on the argument side)."""

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        return list(self.find(rule, ops)(nodes))

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        raise NotImplementedError

    @staticmethod
    def at(ops: Sequence[Operand]) -> tuple[tuple[str, str], str]:
        """The node key (side, pattern) and display prefix of the rule's one operand."""
        return (ops[0].side, ops[0].pattern), "$args" if ops[0].side == "arg" else ""


class EpisodeMemory(Protocol):
    """What the engine keeps of one episode for the code judged against earlier calls (`EpisodeCheck`):
    every call of the episode is recorded in input order, after it is checked."""

    @property
    def pairs(self) -> Sequence[tuple[str, str]]:
        """The places the memory tracks (none: it remembers nothing and finds nothing)."""
        ...

    def record(self, tool: str, arguments: Any, result: Any, call_id: Any = "", ok: bool = True) -> None:
        """Remember a call (`ok`: its status was ok; `call_id`: its id, or a function giving it)."""
        ...

    def blank(self) -> EpisodeMemory:
        """An empty memory of the same places."""
        ...


class EpisodeProgram(Protocol):
    """The compiled form of an `EpisodeCheck`'s rules of one checker (`EpisodeCheck.compiled`)."""

    def memory(self) -> EpisodeMemory:
        """An empty memory of one episode."""
        ...

    def step(
        self, memory: EpisodeMemory, tool: str, arguments: Any, result: Any, call_id: Any, judge: bool
    ) -> list[Violation]:
        """The violations of this status-ok call against the episode so far (none when not `judge`),
        then the call recorded in `memory`."""
        ...


class EpisodeCheck(Check):
    """A code judged against the earlier calls of its episode (`per_episode`), not on a call alone: the
    engine keeps one memory per episode, made by `memory`, and asks this check per call (`judge`,
    `compiled`) and per corpus (`corpus_violations`, `corpus_witnesses`)."""

    per_episode = True

    def memory(self, rules: Iterable[Rule]) -> EpisodeMemory:
        """An empty memory of one episode for these rules (of one checker)."""
        raise NotImplementedError

    def judge(self, rule: Rule, memory: EpisodeMemory, result: Any) -> Violation | None:
        """The violation of `rule` by this call's `result` against the episode so far, or None."""
        raise NotImplementedError

    def compiled(self, rules: Sequence[Rule]) -> EpisodeProgram:
        """These rules (of one checker, all tools) compiled for the per-call checker."""
        raise NotImplementedError

    def corpus_violations(
        self, entries: Sequence[RuleEntry], corpus: Corpus, calls: pl.LazyFrame
    ) -> pl.DataFrame:
        """(cid, ridx, path, present) of every violation of this code's `entries` among the checked
        `calls` (cid, trace_id, k, tool, ...), the episodes' other calls serving as earlier ones."""
        raise NotImplementedError

    def corpus_witnesses(
        self, entries: Sequence[RuleEntry], corpus: Corpus, found: pl.DataFrame, texts: CallTexts | None
    ) -> dict[tuple[int, int], Violation]:
        """The violation of each hit (cid, ridx) of this code's entries in `found`, rendered."""
        raise NotImplementedError


class NoMemory:
    """The memory of a checker that judges nothing per episode: it tracks no place."""

    pairs: tuple[tuple[str, str], ...] = ()

    def record(self, tool: str, arguments: Any, result: Any, call_id: Any = "", ok: bool = True) -> None:
        return None

    def blank(self) -> NoMemory:
        return self
