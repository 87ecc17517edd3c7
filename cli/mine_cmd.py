"""`contracts mine`, `contracts rules` and `contracts diff`: mine a contract set, show it, compare two.

Thin layer over `output_contracts.mining` (mine, explain, diff). Defaults come from the project config
(`paths.corpus`, `paths.contracts`, `paths.registry`, `mine.*`). The contract set goes to the `-o` file
(or stdout with `-o -`); `--json` prints machine-readable data on stdout; summaries and tables for people
go to stderr for `mine`, and to stdout for `rules` and `diff`, whose table *is* their output.
`mine --engine dask` runs the same mining on Dask workers, one task per tool, and writes the same bytes
(`output_contracts.mining.distributed`, docs/distributed.md); Dask is imported only then.
Exit codes: 0 ok, 1 findings (`diff --fail-on-removed` with removed rules), 2 usage or input errors.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from rich.console import Console

from output_contracts.choices import Clean, RuleSource
from output_contracts.cli.common import (
    EXIT_FINDINGS,
    AllowEmptyFlag,
    JsonFlag,
    PlainFlag,
    QuietFlag,
    SeedOpt,
    code_option,
    corpus_option,
    err,
    folds_option,
    format_option,
    out,
    output_option,
    phase,
    progress_bar,
    registry_option,
    tool_option,
)
from output_contracts.cli.settings import MiningSettings, resolved
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.errors import UsageError
from output_contracts.jsonutil import pretty_json
from output_contracts.settings import Settings, setting

if TYPE_CHECKING:
    from output_contracts.audit.heldout import FoldPresence
    from output_contracts.codes.contract_set import ContractSet, Rule
    from output_contracts.mining.diff import SetDiff


class Engine(StrEnum):
    """Where `mine` runs: in this process, or on Dask workers (the same bytes either way)."""

    local = "local"
    dask = "dask"


def _dump(value: Any) -> None:
    out.print(orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode(), markup=False)


def _summary(cs: ContractSet, dest: str, plain: bool, to: Console) -> None:
    """The rules per tool and class (on stderr; `--plain` TSV on stdout unless the set goes there)."""
    from output_contracts.codes.table import specs

    CODES = [c.name for c in specs()]
    short = {c.name: c.short for c in specs()}

    # column headers: the short names (narrow terminals); `contracts codes` lists the full names
    grid = Grid([Column("tool", "name"), *(Column(short[c], "num") for c in CODES), Column("total", "num")])
    full = cs.rules_for(None)
    counts = Counter((r.tool, r.code) for r in full)
    for tool in sorted(cs.tools):
        row = [counts.get((tool, c), 0) for c in CODES]
        grid.add_row(tool, *[(n if plain else str(n) if n else "·") for n in row], sum(row))
    totals = [sum(counts.get((t, c), 0) for t in cs.tools) for c in CODES]
    grid.add_footer("all", *totals, sum(totals))
    show(to, grid, plain=plain)
    if plain:
        return
    folds = ", ".join(f"{fc.fold}: {len(fc.rules)}" for fc in cs.folds)
    say(
        err,
        f"mined {len(full)} rules for {len(cs.tools)} tools from {cs.corpus.get('clean_calls', 0):,} clean calls "
        f"({cs.corpus.get('tasks', 0):,} tasks)"
        + (f"; fold checkers (k = {cs.k}, seed {cs.seed}) {folds}" if cs.folds else "")
        + f" -> {dest}",
    )


MineSourcesArg = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="SRC",
        help="A corpus folder, or trace files/folders to ingest on the fly into a temporary corpus "
        "(default: paths.corpus from contracts.toml).",
        show_default=False,
    ),
]
MineOutputOpt = Annotated[
    Path | None, output_option("Contract set file, - for stdout (default: paths.contracts).")
]
MineFoldsOpt = Annotated[
    int | None, folds_option("Number of task folds K: K fold checkers (default: mine.folds, 1).")
]
MinSupportOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--min-support",
        metavar="CLASS=N",
        help="Per-class example threshold CLASS=N (repeatable), e.g. DOMAIN=100.",
    ),
]
MaxDomainOpt = Annotated[
    int | None,
    typer.Option(
        "--max-domain", min=1, metavar="N", help="Largest DOMAIN to emit (default: mine.max_domain, 8)."
    ),
]
CleanOpt = Annotated[
    Clean | None, typer.Option("--clean", help="Clean calls: ok, or reward (also full-reward episodes).")
]
MineSourceOpt = Annotated[
    RuleSource | None,
    typer.Option(
        "--source",
        help="Rules from: all (mined and declared), mined (the traces only), schema (the registry's "
        "output schemas only: the schema-only detector).",
    ),
]
MineRegistryOpt = Annotated[
    Path | None,
    registry_option(
        "tools.json: substitutes, immutables and schema rules (default: paths.registry, "
        "else the corpus's own tools.json)."
    ),
]
MineToolOpt = Annotated[list[str] | None, tool_option("Mine only this tool (repeatable).")]
MaxViolationRateOpt = Annotated[
    float | None,
    typer.Option(
        "--max-violation-rate",
        metavar="X",
        help="Keep a rule when its 95% violation bound 1-0.05^(1/n) is at most X, instead of the "
        "per-class support thresholds.",
    ),
]
PartRowsOpt = Annotated[
    int | None,
    typer.Option(
        "--part-rows",
        min=1,
        metavar="N",
        help="Leaf rows read at once: a bigger corpus is mined in task parts, one at a time "
        "(bounded memory; the output does not depend on it). Default: mine.part_rows, 2,000,000.",
    ),
]
MineFormatOpt = Annotated[
    str, format_option("Trace format when ingesting on the fly (default: auto-detect).")
]
EngineOpt = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="local, or dask: one task per tool on Dask workers (needs output-contracts[dask]); the "
        "contract set is byte-identical.",
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        metavar="ADDRESS",
        help="With --engine dask: a running Dask scheduler (tcp://host:8786) whose workers read the "
        "corpus at the same path (default: a local cluster).",
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=1,
        metavar="N",
        help="With --engine dask: worker processes of the local cluster (default: one per core).",
    ),
]
VerifyOpt = Annotated[
    bool | None,
    typer.Option(
        "--verify",
        help="Also replay every emitted rule through the shipped checker over all of its mining data "
        "(must fire zero times; about +50% CPU and twice the peak memory). Each class already holds "
        "on that data by construction, which the tests prove; this is the belt-and-braces pass. "
        "Default: mine.verify, off.",
    ),
]


@dataclass(frozen=True, kw_only=True)
class MineSettings(MiningSettings):
    """`contracts mine`, resolved: its options over `[paths]` and `[mine]` over the defaults."""

    output: Path = setting("paths.contracts", required="contract set file (-o)")
    sources: list[Path] = setting("paths.corpus", required="corpus folder (SRC)", many=True)
    registry: Path | None = setting("paths.registry")
    folds: int = setting("mine.folds")
    seed: int = setting("mine.seed")
    rule_source: str = setting("mine.source")
    part_rows: int | None = setting("mine.part_rows")
    verify: bool = setting("mine.verify")
    tool: list[str] | None
    fmt: str
    engine: Engine
    scheduler: str | None
    workers: int | None
    allow_empty: bool
    as_json: bool
    quiet: bool
    plain: bool

    def check_given(self) -> None:
        """`--scheduler` and `--workers` only with `--engine dask`, and not both."""
        if self.engine is Engine.local and (self.scheduler is not None or self.workers is not None):
            raise UsageError(
                "--scheduler and --workers apply to --engine dask",
                field="--scheduler" if self.scheduler else "--workers",
            )
        if self.scheduler is not None and self.workers is not None:
            raise UsageError(
                "--workers sizes the local cluster; with --scheduler the cluster's own workers run",
                field="--workers",
            )


def mine_command(
    sources: MineSourcesArg = None,
    output: MineOutputOpt = None,
    folds: MineFoldsOpt = None,
    seed: SeedOpt = None,
    min_support: MinSupportOpt = None,
    max_domain: MaxDomainOpt = None,
    clean: CleanOpt = None,
    rule_source: MineSourceOpt = None,
    registry: MineRegistryOpt = None,
    tool: MineToolOpt = None,
    max_violation_rate: MaxViolationRateOpt = None,
    part_rows: PartRowsOpt = None,
    fmt: MineFormatOpt = "auto",
    engine: EngineOpt = Engine.local,
    scheduler: SchedulerOpt = None,
    workers: WorkersOpt = None,
    verify: VerifyOpt = None,
    allow_empty: AllowEmptyFlag = False,
    as_json: JsonFlag = False,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Mine per-tool contracts (rules with support) from clean traces, with k-fold checkers."""
    _mine(resolved(MineSettings, locals()))


def _mine(s: MineSettings) -> None:
    """Mine the sources, write the contract set, report what was mined and which tools got no rule."""
    from output_contracts.mining.coverage import uncovered
    from output_contracts.traces.sources import open_corpus
    from output_contracts.traces.tool_registry import load_registry

    reg = load_registry(s.registry) if s.registry is not None else None
    params = s.mine_params(folds=s.folds, seed=s.seed, tools=s.tool or None, rule_source=s.rule_source)
    run = _runner(s)
    bar = progress_bar(s.quiet)
    with open_corpus(
        s.sources,
        format=s.fmt,
        registry=s.registry,
        prefix="contracts-mine-",
        progress=bar,
        allow_empty=s.allow_empty,
    ) as corpus:
        cs = run(corpus, params, progress=bar, registry=reg)
        gaps = uncovered(corpus, cs, params)
    dest = str(s.output)
    if dest == "-":
        out.file.write(pretty_json(cs.to_json()).decode())
        out.file.flush()
    else:
        cs.save(s.output)
    if s.as_json and dest != "-":
        _dump(_mined_json(cs, dest, gaps))
    if s.plain and not s.as_json:  # data, printed whatever -q says (on stdout unless the set goes there)
        _summary(cs, dest, True, to=err if dest == "-" else out)
    elif not s.quiet:
        _summary(cs, dest, False, to=err)
        for g in gaps:
            say(err, f"no rules for {g.tool}: {g.reason}")


def _runner(s: MineSettings) -> Callable[..., ContractSet]:
    """The mining function `--engine` names, with the run's options bound (`--part-rows` is the local
    engine's; a scheduler's workers need a corpus folder they can all read)."""
    from output_contracts.mining.miner import mine
    from output_contracts.traces.sources import is_corpus

    if s.part_rows is not None and s.engine is Engine.dask:
        raise UsageError("--part-rows applies to --engine local", field="--part-rows")
    run: Callable[..., ContractSet]
    if s.engine is Engine.dask:
        from output_contracts.mining.distributed import mine_dask

        run = partial(mine_dask, scheduler=s.scheduler, workers=s.workers, verify=s.verify)
    elif s.part_rows is not None:
        run = partial(mine, verify=s.verify, part_rows=s.part_rows)
    else:
        run = partial(mine, verify=s.verify)
    if s.scheduler is not None and not (len(s.sources) == 1 and is_corpus(s.sources[0])):
        raise UsageError(
            "--scheduler needs a corpus folder every worker can read at the same path; "
            "run `contracts ingest` into shared storage first",
            field="SRC",
        )
    return run


def _mined_json(cs: ContractSet, dest: str, gaps: list[Any]) -> dict[str, Any]:
    """`mine --json`: where the set went, its rules by code, tool and fold, and the uncovered tools."""
    full = cs.rules_for(None)
    return {
        "output": dest,
        "rules": len(full),
        "by_code": dict(sorted(Counter(r.code for r in full).items())),
        "by_tool": dict(sorted(Counter(r.tool for r in full).items())),
        "folds": [{"fold": fc.fold, "rules": len(fc.rules)} for fc in cs.folds],
        "corpus": dict(cs.corpus),
        "uncovered": [g.to_json() for g in gaps],
    }


def rules_command(
    contracts: Annotated[
        Path | None,
        typer.Argument(
            metavar="CONTRACTS",
            help="Contract set (default: paths.contracts from contracts.toml).",
            show_default=False,
        ),
    ] = None,
    tool: Annotated[list[str] | None, tool_option("Only this tool (repeatable).")] = None,
    code: Annotated[list[str] | None, code_option("Only this property code (repeatable).")] = None,
    by_fold: Annotated[
        bool,
        typer.Option(
            "--by-fold",
            help="Show each rule's fold checkers, the fewest tasks behind it, whether that is thin (and "
            "the held-out rate with --corpus).",
        ),
    ] = False,
    corpus: Annotated[
        Path | None, corpus_option("Corpus to measure held-out violation rates on (with --by-fold).")
    ] = None,
    as_json: JsonFlag = False,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """List the rules of a contract set: tool, code, path, params, support, source."""
    _rules(resolved(RulesSettings, locals()))


@dataclass(frozen=True, kw_only=True)
class RulesSettings(Settings):
    """`contracts rules`, resolved: the contract set defaults to `paths.contracts`."""

    contracts: Path = setting("paths.contracts", required="contract set")
    tool: list[str] | None
    code: list[str] | None
    by_fold: bool
    corpus: Path | None
    as_json: bool
    quiet: bool
    plain: bool


def _rules(s: RulesSettings) -> None:
    """Select the rules asked for, with their fold report under `--by-fold`, and print them."""
    from output_contracts.audit.heldout import fold_report
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.codes.table import names

    CODES = names()
    from output_contracts.traces.corpus import Corpus

    cs = ContractSet.load(s.contracts)
    codes = {c.upper() for c in s.code} if s.code else None
    if codes and codes - set(CODES):
        raise UsageError(
            f"unknown code(s) {sorted(codes - set(CODES))} (known: {', '.join(CODES)})", field="--code"
        )
    if s.tool and (unknown := sorted(set(s.tool) - set(cs.tools))):
        raise UsageError(
            f"no such tool in the contract set: {', '.join(unknown)}", field="--tool", source=str(s.contracts)
        )
    rules = [
        r
        for r in cs.all_rules()
        if (s.tool is None or r.tool in s.tool)
        and (codes is None or r.code in codes)
        and (r.in_full or s.by_fold)
    ]
    report = None
    if s.by_fold:
        with phase(s.quiet or s.plain or s.as_json, "fold report"):
            report = fold_report(cs, Corpus.open(s.corpus) if s.corpus is not None else None, rules)
    if s.as_json:
        _dump([_rule_json(r, report[i] if report is not None else None) for i, r in enumerate(rules)])
        return
    show(out, _rules_grid(cs, rules, report, s), plain=s.plain)
    if not (s.quiet or s.plain):  # the notes under the table are for people; the table is the data
        _rules_notes(len(rules), report)


def _rule_json(r: Rule, fp: FoldPresence | None = None) -> dict[str, Any]:
    """A rule as `rules --json` prints it: its JSON, its statement, and its fold report when asked."""
    from output_contracts.codes.table import describe

    d = r.to_json()
    d["statement"] = describe(r)
    if fp is not None:
        d["folds"] = list(fp.folds)
        d["tasks_min"] = fp.tasks_min
        d["thin"] = fp.thin
        if fp.heldout_calls is not None:
            d["heldout"] = {
                "calls": fp.heldout_calls,
                "violations": fp.heldout_violations,
                "rate": fp.heldout_rate,
            }
    return d


def _rules_grid(
    cs: ContractSet, rules: list[Rule], report: list[FoldPresence] | None, s: RulesSettings
) -> Grid:
    """The rules table (with the fold columns under `--by-fold`, held-out ones with `--corpus`)."""
    from output_contracts.codes.table import describe_params

    cols = [
        Column("tool", "name"),
        Column("code", "key"),
        Column("path", "path"),
        Column("params", "text"),
        Column("support", "num"),
        Column("source", "key"),
    ]
    if report is not None:
        cols += [Column("folds", "text"), Column("tasks", "num")]
        if s.corpus is not None:
            cols.append(Column("held-out", "num"))
    grid = Grid(cols, section=0)
    for i, r in enumerate(rules):
        support = (
            f"{r.support.calls:,} / {r.support.tasks:,}"
            if not s.plain
            else f"{r.support.calls}/{r.support.tasks}"
        )
        row: list[str | int | None] = [
            r.tool,
            r.code,
            r.paths[0] or '""',
            describe_params(r),
            support,
            "both" if len(r.source) > 1 else r.source[0],
        ]
        if report is not None:
            row += _fold_cells(report[i], r, cs.k, s.corpus is not None)
        grid.add_row(*row)
    return grid


def _fold_cells(fp: FoldPresence, r: Rule, k: int, heldout: bool) -> list[str | int | None]:
    """A rule's `--by-fold` cells: its fold checkers, the fewest tasks behind it, its held-out rate."""
    every = len(fp.folds) == k
    cells: list[str | int | None] = [
        ("all" if every else ",".join(map(str, fp.folds)) or "-") + ("" if r.in_full else " only"),
        f"{fp.tasks_min:,}" + (" thin" if fp.thin else ""),
    ]
    if heldout:
        rate = fp.heldout_rate
        cells.append("-" if rate is None else f"{fp.heldout_violations}/{fp.heldout_calls} {rate:.1%}")
    return cells


def _rules_notes(shown: int, report: list[FoldPresence] | None) -> None:
    """The sentences under the rules table: what support counts, and what `thin` means."""
    from output_contracts.audit.heldout import THIN_TASKS

    say(out, f"{shown} rules (support = clean calls / distinct tasks; source both = mined and schema)")
    if report is not None:
        n_thin = sum(fp.thin for fp in report)
        say(
            out,
            f"tasks = fewest distinct tasks behind the rule in any checker holding it; {n_thin} thin "
            f"(fewer than {THIN_TASKS} tasks, or twice its class's task minimum: a 95% task-level "
            "violation bound above 10%)",
        )


def _diff_table(d: SetDiff, plain: bool) -> None:
    from output_contracts.codes.table import describe

    grid = Grid(
        [Column("change", "key"), Column("tool", "name"), Column("code", "key"), Column("rule", "text")]
    )
    for r in d.removed:
        grid.add_row("removed", r.tool, r.code, describe(r), style="red")
    for c in d.changed:
        grid.add_row(
            "changed", c.new.tool, c.new.code, f"{describe(c.old)}  ->  {describe(c.new)}", style="yellow"
        )
    for r in d.added:
        grid.add_row("added", r.tool, r.code, describe(r), style="green")
    if plain:
        show(out, grid, plain=True)
        return
    if not d.empty:
        show(out, grid)
    say(
        out,
        f"{len(d.removed)} removed, {len(d.changed)} changed, {len(d.added)} added, {d.unchanged} unchanged",
    )


def diff_command(
    old: Annotated[Path, typer.Argument(metavar="OLD", help="The old contract set.")],
    new: Annotated[Path, typer.Argument(metavar="NEW", help="The new contract set.")],
    fail_on_removed: Annotated[
        bool, typer.Option("--fail-on-removed", help="Exit 1 when any rule of OLD is gone from NEW.")
    ] = False,
    as_json: JsonFlag = False,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Compare two contract sets: rules added, removed and changed (same tool/code/paths, new params)."""
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.mining.diff import diff_sets

    del quiet  # accepted by every command; diff writes nothing to stderr
    d = diff_sets(ContractSet.load(old), ContractSet.load(new))
    if as_json:
        _dump(d.to_json())
    else:
        _diff_table(d, plain)
    if fail_on_removed and d.removed:
        raise typer.Exit(EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    """Add `mine`, `rules` and `diff` to the root app."""
    app.command("mine")(mine_command)
    app.command("rules")(rules_command)
    app.command("diff")(diff_command)
