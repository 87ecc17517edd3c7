"""The evaluation of CONSISTENT: per call against an episode's memory (`memory.EpisodeMemory`), compiled
(`compiled`), and over a corpus's whole episodes (`episodes`); the semantics are stated in `memory`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from output_contracts.codes.consistent import Consistent
from output_contracts.codes.consistent.compiled import ConsistentProgram
from output_contracts.codes.consistent.episodes import episode_violations, episode_witnesses
from output_contracts.codes.consistent.memory import EpisodeMemory
from output_contracts.codes.contract_set import Rule
from output_contracts.codes.evaluation import EpisodeCheck, EpisodeProgram
from output_contracts.codes.hits import OpRow, RuleEntry, empty_hits
from output_contracts.codes.nodes import Nodes, Operand
from output_contracts.codes.violation import Violation

if TYPE_CHECKING:
    from output_contracts.traces.call_texts import CallTexts
    from output_contracts.traces.corpus import Corpus


class ConsistentCheck(Consistent, EpisodeCheck):
    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        return []  # judged per episode (`EpisodeMemory`), never on a call alone

    def op_rows(self, entries: Sequence[RuleEntry]) -> list[OpRow]:
        return []  # not joined to the leaves: `corpus_violations` judges it over whole episodes

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        return empty_hits()

    def memory(self, rules: Iterable[Rule]) -> EpisodeMemory:
        return EpisodeMemory((r.paths[0], r.paths[1]) for r in rules)

    def judge(self, rule: Rule, memory: Any, result: Any) -> Violation | None:
        seen = memory.breaks(rule, result)
        return None if seen is None else self.episode_witness(rule, result, seen)

    def compiled(self, rules: Sequence[Rule]) -> EpisodeProgram:
        return ConsistentProgram.of(self, rules)

    def corpus_violations(
        self, entries: Sequence[RuleEntry], corpus: Corpus, calls: pl.LazyFrame
    ) -> pl.DataFrame:
        return episode_violations([e for e in entries if e.rule.code == self.name], corpus, calls)

    def corpus_witnesses(
        self, entries: Sequence[RuleEntry], corpus: Corpus, found: pl.DataFrame, texts: CallTexts | None
    ) -> dict[tuple[int, int], Violation]:
        return episode_witnesses(self, [e for e in entries if e.rule.code == self.name], corpus, found, texts)


CHECK = ConsistentCheck()
CHECKS = (CHECK,)
