"""REQUIRED — `paths [P]`, params `{}`: a key present in every object at its parent pattern.

Semantics: for every node at parent(P) that is an object, the key last(P) is present (a key holding
`null` is present; a missing key is not). Violation path = the parent's concrete path + "/" + key;
expected `"present"`; observed null with `present: false`.

Both evaluations group the rules of one tool that share a parent: per call, the parent objects are
looked up once and each rule tests its key in the parent's dict; over a corpus, the parents are joined
to the leaves once per group, and children under a parent without wildcards are joined apart keeping
only ids (`lean` rows), since a call is complete when its group has as many children as rules.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from output_contracts.codes.contract_set import Rule, split_side
from output_contracts.codes.engine.compiled import ToolBuilder
from output_contracts.codes.evaluation import Check
from output_contracts.codes.hits import OpRow, RuleEntry, empty_hits
from output_contracts.codes.nodes import GroupFinder, Nodes, Operand, PathFinder, child_missing
from output_contracts.codes.required import Required
from output_contracts.traces.pointers import (
    WILD_TOKENS,
    escape_token,
    fixed_index,
    parent_pattern,
    unescape_token,
)


def _groups(entries: Sequence[RuleEntry]) -> tuple[dict[int, int], dict[tuple[int, str, str, str], int]]:
    """Rules grouped by their parent node: (rule ridx -> group id, group key -> group id)."""
    gid_of: dict[int, int] = {}
    groups: dict[tuple[int, str, str, str], int] = {}
    for e in entries:
        key = (e.k, e.rule.tool, e.ops[0].side, e.ops[0].pattern)
        gid_of[e.ridx] = groups.setdefault(key, len(groups))
    return gid_of, groups


def _incomplete_calls(
    entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame, n_rules: pl.LazyFrame
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """`hits` and `lean` of the calls that may miss a required key: a call misses none when its
    children (lean rows and op 1 hits) number, summed over its object parents, their groups' rule counts.

    Exact when every rule's key is a plain key (no wildcard, no fixed index): a child node then lies
    below an object parent of its own group in the same call, which has one leaf row per path, so each
    (call, group) has at most (object parents) x (rules) children, and the sums are equal only when
    every group is complete, the test `vectorised` makes per group. Most calls of a corpus miss
    nothing: only the others go through the per-group joins. Otherwise every call does."""
    if not all(_plain_key(e) for e in entries):
        return hits, lean
    want = (
        hits.filter((pl.col("op") == 0) & (pl.col("kind") == "object"))
        .select("cid", pl.col("ridx").alias("gid"))
        .join(n_rules, on="gid")
        .group_by("cid")
        .agg(pl.col("n_rules").sum().alias("want"))
    )
    have = (
        pl.concat([lean.select("cid"), hits.filter(pl.col("op") == 1).select("cid")])
        .group_by("cid")
        .agg(pl.len().alias("have"))
    )
    short = (
        want.join(have, on="cid", how="left")
        .filter(pl.col("have").fill_null(0) < pl.col("want"))
        .select("cid")
        .collect()
        .get_column("cid")
        .implode()
    )
    # collected here: the plans of `vectorised` read each several times, and a lazy filter would be
    # evaluated again in each (about 40% of `vectorised`'s time at 100k calls)
    kept = pl.collect_all([hits.filter(pl.col("cid").is_in(short)), lean.filter(pl.col("cid").is_in(short))])
    return kept[0].lazy(), kept[1].lazy()


def _plain_key(e: RuleEntry) -> bool:
    """Whether the rule's key is a plain object key (not a wildcard or a fixed index)."""
    tok = e.ops[1].pattern.rpartition("/")[2]
    return tok not in WILD_TOKENS and fixed_index(tok) is None


def _flat(e: RuleEntry) -> bool:
    """A rule whose parent has no wildcard: one parent node per call at most."""
    return not e.ops[0].wpos


class RequiredCheck(Required, Check):
    hit_cols = ("cid", "ridx", "op", "path", "kind")

    def operands(self, rule: Rule) -> list[Operand]:
        """The parent first, then the key's own path."""
        side, pattern = split_side(rule.paths[0])
        parent = Operand.of(("$args" if side == "arg" else "") + parent_pattern(pattern))
        return [parent, Operand.of(rule.paths[0])]

    def paths(self, rule: Rule, nodes: Nodes, ops: Sequence[Operand]) -> list[str]:
        parent, child = ops
        key_tok = child.pattern.rpartition("/")[2]
        have = {p.rpartition("/")[0] for p, _ in nodes.get((child.side, child.pattern), [])}
        return [
            child.display(f"{p}/{key_tok}")
            for p, v in nodes.get((parent.side, parent.pattern), [])
            if isinstance(v, dict) and p not in have
        ]

    def find(self, rule: Rule, ops: Sequence[Operand]) -> PathFinder:
        parent, child = ops
        pkey, ckey = (parent.side, parent.pattern), (child.side, child.pattern)
        prefix = "$args" if child.side == "arg" else ""
        tail = "/" + child.pattern.rpartition("/")[2]

        def required(nodes: Nodes) -> Sequence[str]:
            parents = nodes.get(pkey)
            if not parents:
                return ()
            have = {p.rpartition("/")[0] for p, _ in nodes.get(ckey, ())}
            return [prefix + p + tail for p, v in parents if isinstance(v, dict) and p not in have]

        return required

    def group(self, rules: Sequence[tuple[Rule, Sequence[Operand]]]) -> list[GroupFinder]:
        """One finder per parent: the parent objects are looked up once and each rule tests its key in
        the object's dict (the same meaning as `paths`)."""
        groups: dict[tuple[str, str], tuple[str, list[tuple[Rule, str, str, bool]]]] = {}
        for r, ops in rules:
            parent, child = ops
            tok = child.pattern.rpartition("/")[2]
            key = unescape_token(tok)
            pkey = (parent.side, parent.pattern)
            if pkey not in groups:
                groups[pkey] = ("$args" if child.side == "arg" else "", [])
            groups[pkey][1].append((r, key, tok, escape_token(key) == tok))

        def finder(
            pkey: tuple[str, str], prefix: str, members: list[tuple[Rule, str, str, bool]]
        ) -> GroupFinder:
            def missing(nodes: Nodes) -> list[tuple[Rule, str]]:
                out: list[tuple[Rule, str]] = []
                for p, v in nodes.get(pkey, ()):
                    if isinstance(v, dict):
                        for rule, key, tok, canonical in members:
                            if canonical and key in v:
                                continue  # present (the common case, tested inline)
                            if child_missing(v, key, tok, canonical):
                                out.append((rule, f"{prefix}{p}/{tok}"))
                return out

            return missing

        return [finder(pkey, prefix, members) for pkey, (prefix, members) in groups.items()]

    def op_rows(self, entries: Sequence[RuleEntry]) -> list[OpRow]:
        """Parents once per group (op 0, ridx = the group id); children per rule (op 1), lean (ids only,
        aux = the group id) when the parent has no wildcard."""
        gid_of, groups = _groups(entries)
        rows = [OpRow(k, tool, side, pattern, gid, 0) for (k, tool, side, pattern), gid in groups.items()]
        for e in entries:
            child = e.ops[1]
            if _flat(e):
                rows.append(
                    OpRow(e.k, e.rule.tool, child.side, child.pattern, e.ridx, 1, gid_of[e.ridx], True)
                )
            else:
                rows.append(OpRow(e.k, e.rule.tool, child.side, child.pattern, e.ridx, 1))
        return rows

    def vectorised(
        self, entries: Sequence[RuleEntry], hits: pl.LazyFrame, lean: pl.LazyFrame
    ) -> pl.LazyFrame:
        """Object parents without the required key.

        The parent nodes come once per group of rules sharing a parent (op 0, `ridx` the group id). A
        parent pattern without wildcards has one node per call, so a call is complete when its group has
        as many children as rules; only incomplete calls are expanded to rules and anti-joined with the
        children present (`lean`: cid, ridx, aux = group of each present child of a flat rule). Counting
        rows counts distinct children because a call has one leaf row per path. Under arrays, children
        (op 1 hits) are matched to their parent by path (the child's path minus its last token, whose
        length the rule fixes).
        """
        if not entries:
            return empty_hits()
        gid_of = _groups(entries)[0]
        keytab = pl.DataFrame(
            {
                "ridx": [e.ridx for e in entries],
                "gid": [gid_of[e.ridx] for e in entries],
                "tok": [e.ops[1].pattern.rpartition("/")[2] for e in entries],
                "cut": [len(e.ops[1].pattern.rpartition("/")[2]) + 1 for e in entries],
                "flat": [_flat(e) for e in entries],
            },
            schema={
                "ridx": pl.UInt32,
                "gid": pl.UInt32,
                "tok": pl.String,
                "cut": pl.Int64,
                "flat": pl.Boolean,
            },
        ).lazy()
        n_rules = keytab.group_by("gid").agg(pl.len().alias("n_rules"))
        hits, lean = _incomplete_calls(entries, hits, lean, n_rules)
        parents = hits.filter(pl.col("op") == 0)
        par = parents.filter(pl.col("kind") == "object").select("cid", pl.col("ridx").alias("gid"), "path")
        flat_children = lean.select("cid", "ridx", pl.col("aux").alias("gid"))
        have = flat_children.group_by("cid", "gid").agg(pl.len().alias("n_have"))
        incomplete = (
            par.join(keytab.filter(pl.col("flat")).select("gid").unique(), on="gid")
            .join(have, on=["cid", "gid"], how="left")
            .join(n_rules, on="gid")
            .filter(pl.col("n_have").fill_null(0) < pl.col("n_rules"))
            .select("cid", "gid", "path")
        )
        simple = (
            incomplete.join(keytab.select("ridx", "gid"), on="gid")
            .join(
                flat_children.join(incomplete.select("cid").unique(), on="cid", how="semi").select(
                    "cid", "ridx"
                ),
                on=["cid", "ridx"],
                how="anti",
            )
            .select("cid", "ridx", "path")
        )
        # Under arrays: a child node exists only below an object parent, and a call has one leaf row per
        # path, so a (call, group) whose children number (object parents x rules) is complete; only the
        # other calls are expanded to (parent, rule) and anti-joined with the children by path.
        nested_rules = keytab.filter(~pl.col("flat")).select("ridx", "gid")
        # the parent's path of each child is cut only for the calls that need it (`short`, below)
        nested_children = (
            hits.filter(pl.col("op") == 1)
            .select("cid", "ridx", "path")
            .join(keytab.filter(~pl.col("flat")), on="ridx")
            .select("cid", "ridx", "gid", "path", "cut")
        )
        nested_par = par.join(nested_rules.select("gid").unique(), on="gid")
        short = (
            nested_par.group_by("cid", "gid")
            .agg(pl.len().alias("n_par"))
            .join(
                nested_children.group_by("cid", "gid").agg(pl.len().alias("n_have")),
                on=["cid", "gid"],
                how="left",
            )
            .join(n_rules, on="gid")
            .filter(pl.col("n_have").fill_null(0) < pl.col("n_par") * pl.col("n_rules"))
            .select("cid", "gid")
        )
        nested = (
            nested_par.join(short, on=["cid", "gid"], how="semi")
            .join(nested_rules, on="gid")
            .join(
                nested_children.join(short, on=["cid", "gid"], how="semi").select(
                    "cid", "ridx", pl.col("path").str.head(-pl.col("cut")).alias("path")
                ),
                on=["cid", "ridx", "path"],
                how="anti",
            )
            .select("cid", "ridx", "path")
        )
        missing = pl.concat([simple, nested]).join(keytab.select("ridx", "tok"), on="ridx")
        return missing.select(
            "cid",
            "ridx",
            pl.concat_str(pl.col("path"), pl.lit("/"), pl.col("tok")).alias("path"),
            pl.lit(False).alias("present"),
        )

    def compile(self, rule: Rule, ri: int, ops: Sequence[Operand], b: ToolBuilder) -> bool:
        # the keys of one parent tested together where the walk meets the parent (as `group`)
        b.key_present(ri, rule, ops[0])
        return True


CHECKS = (RequiredCheck(),)
