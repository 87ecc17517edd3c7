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
    JsonFlag,
    PlainFlag,
    QuietFlag,
    SeedOpt,
    code_option,
    config,
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
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.errors import UsageError
from output_contracts.jsonutil import pretty_json

if TYPE_CHECKING:
    from output_contracts.codes.contract_set import ContractSet, Rule
    from output_contracts.mining.diff import SetDiff


class Engine(StrEnum):
    """Where `mine` runs: in this process, or on Dask workers (the same bytes either way)."""

    local = "local"
    dask = "dask"


def _dump(value: Any) -> None:
    out.print(orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode(), markup=False)


def _parse_min_support(items: list[str] | None) -> dict[str, int] | None:
    if not items:
        return None
    res: dict[str, int] = {}
    for item in items:
        code, sep, n = item.partition("=")
        if not sep or not n.strip().lstrip("-").isdigit():
            raise UsageError(
                f"--min-support takes CLASS=N (e.g. DOMAIN=100), got {item!r}", field="--min-support"
            )
        res[code.strip().upper()] = int(n)
    return res


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


def mine_command(
    sources: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="SRC",
            help="A corpus folder, or trace files/folders to ingest on the fly into a temporary corpus "
            "(default: paths.corpus from contracts.toml).",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None, output_option("Contract set file, - for stdout (default: paths.contracts).")
    ] = None,
    folds: Annotated[
        int | None, folds_option("Number of task folds K: K fold checkers (default: mine.folds, 1).")
    ] = None,
    seed: SeedOpt = None,
    min_support: Annotated[
        list[str] | None,
        typer.Option(
            "--min-support",
            metavar="CLASS=N",
            help="Per-class example threshold CLASS=N (repeatable), e.g. DOMAIN=100.",
        ),
    ] = None,
    max_domain: Annotated[
        int | None,
        typer.Option(
            "--max-domain", min=1, metavar="N", help="Largest DOMAIN to emit (default: mine.max_domain, 8)."
        ),
    ] = None,
    clean: Annotated[
        Clean | None, typer.Option("--clean", help="Clean calls: ok, or reward (also full-reward episodes).")
    ] = None,
    rule_source: Annotated[
        RuleSource | None,
        typer.Option(
            "--source",
            help="Rules from: all (mined and declared), mined (the traces only), schema (the registry's "
            "output schemas only: the schema-only detector).",
        ),
    ] = None,
    registry: Annotated[
        Path | None,
        registry_option(
            "tools.json: substitutes, immutables and schema rules (default: paths.registry, "
            "else the corpus's own tools.json)."
        ),
    ] = None,
    tool: Annotated[list[str] | None, tool_option("Mine only this tool (repeatable).")] = None,
    max_violation_rate: Annotated[
        float | None,
        typer.Option(
            "--max-violation-rate",
            metavar="X",
            help="Keep a rule when its 95% violation bound 1-0.05^(1/n) is at most X, instead of the "
            "per-class support thresholds.",
        ),
    ] = None,
    part_rows: Annotated[
        int | None,
        typer.Option(
            "--part-rows",
            min=1,
            metavar="N",
            help="Leaf rows read at once: a bigger corpus is mined in task parts, one at a time "
            "(bounded memory; the output does not depend on it). Default: mine.part_rows, 2,000,000.",
        ),
    ] = None,
    fmt: Annotated[
        str, format_option("Trace format when ingesting on the fly (default: auto-detect).")
    ] = "auto",
    engine: Annotated[
        Engine,
        typer.Option(
            "--engine",
            help="local, or dask: one task per tool on Dask workers (needs output-contracts[dask]); the "
            "contract set is byte-identical.",
        ),
    ] = Engine.local,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            metavar="ADDRESS",
            help="With --engine dask: a running Dask scheduler (tcp://host:8786) whose workers read the "
            "corpus at the same path (default: a local cluster).",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            metavar="N",
            help="With --engine dask: worker processes of the local cluster (default: one per core).",
        ),
    ] = None,
    verify: Annotated[
        bool | None,
        typer.Option(
            "--verify",
            help="Also replay every emitted rule through the shipped checker over all of its mining data "
            "(must fire zero times; about +50% CPU and twice the peak memory). Each class already holds "
            "on that data by construction, which the tests prove; this is the belt-and-braces pass. "
            "Default: mine.verify, off.",
        ),
    ] = None,
    as_json: JsonFlag = False,
    quiet: QuietFlag = False,
    plain: PlainFlag = False,
) -> None:
    """Mine per-tool contracts (rules with support) from clean traces, with k-fold checkers."""
    from output_contracts.codes.mine_params import MineParams
    from output_contracts.mining.coverage import uncovered
    from output_contracts.mining.miner import mine
    from output_contracts.traces.sources import is_corpus, open_corpus
    from output_contracts.traces.tool_registry import load_registry

    if engine is Engine.local and (scheduler is not None or workers is not None):
        raise UsageError(
            "--scheduler and --workers apply to --engine dask",
            field="--scheduler" if scheduler else "--workers",
        )
    if scheduler is not None and workers is not None:
        raise UsageError(
            "--workers sizes the local cluster; with --scheduler the cluster's own workers run",
            field="--workers",
        )
    cfg = config()
    dest = cfg.require_path("paths.contracts", output, "contract set file (-o)")
    srcs = list(sources) if sources else [cfg.require_path("paths.corpus", None, "corpus folder (SRC)")]
    reg_path = cfg.path("paths.registry", registry)
    reg = load_registry(reg_path) if reg_path is not None else None
    supports = _parse_min_support(min_support)
    if supports is None and cfg.get("mine.min_support"):
        supports = {str(k): int(v) for k, v in cfg.get("mine.min_support").items()}
    params = MineParams.of(
        folds=cfg.get("mine.folds", folds),
        seed=cfg.get("mine.seed", seed),
        min_support=supports,
        max_domain=cfg.get("mine.max_domain", max_domain),
        clean=cfg.get("mine.clean", clean.value if clean is not None else None),
        tools=tool or None,
        max_violation_rate=cfg.get("mine.max_violation_rate", max_violation_rate),
        rule_source=cfg.get("mine.source", rule_source.value if rule_source is not None else None) or "all",
    )
    kwargs: dict[str, Any] = {"registry": reg, "verify": bool(cfg.get("mine.verify", verify))}
    run: Any = mine
    rows = cfg.get("mine.part_rows", part_rows)
    if rows is not None:
        if engine is Engine.dask:
            raise UsageError("--part-rows applies to --engine local", field="--part-rows")
        kwargs["part_rows"] = rows
    if engine is Engine.dask:
        from output_contracts.mining.distributed import mine_dask

        run = partial(mine_dask, scheduler=scheduler, workers=workers)
    if scheduler is not None and not (len(srcs) == 1 and is_corpus(srcs[0])):
        raise UsageError(
            "--scheduler needs a corpus folder every worker can read at the same path; "
            "run `contracts ingest` into shared storage first",
            field="SRC",
        )
    bar = progress_bar(quiet)
    with open_corpus(srcs, format=fmt, registry=reg_path, prefix="contracts-mine-", progress=bar) as corpus:
        cs = run(corpus, params, progress=bar, **kwargs)
        gaps = uncovered(corpus, cs, params)
    if str(dest) == "-":
        out.file.write(pretty_json(cs.to_json()).decode())
        out.file.flush()
    else:
        cs.save(dest)
    if as_json and str(dest) != "-":
        full = cs.rules_for(None)
        _dump(
            {
                "output": str(dest),
                "rules": len(full),
                "by_code": dict(sorted(Counter(r.code for r in full).items())),
                "by_tool": dict(sorted(Counter(r.tool for r in full).items())),
                "folds": [{"fold": fc.fold, "rules": len(fc.rules)} for fc in cs.folds],
                "corpus": dict(cs.corpus),
                "uncovered": [g.to_json() for g in gaps],
            }
        )
    if plain and not as_json:  # data, printed whatever -q says (on stdout unless the set goes there)
        _summary(cs, str(dest), True, to=err if str(dest) == "-" else out)
    elif not quiet:
        _summary(cs, str(dest), False, to=err)
        for g in gaps:
            say(err, f"no rules for {g.tool}: {g.reason}")


def _rule_json(r: Rule) -> dict[str, Any]:
    from output_contracts.codes.table import describe

    d = r.to_json()
    d["statement"] = describe(r)
    return d


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
    from output_contracts.audit.heldout import THIN_TASKS, fold_report
    from output_contracts.codes.contract_set import ContractSet
    from output_contracts.codes.table import names

    CODES = names()
    from output_contracts.codes.table import describe_params
    from output_contracts.traces.corpus import Corpus

    path = config().require_path("paths.contracts", contracts, "contract set")
    cs = ContractSet.load(path)
    codes = {c.upper() for c in code} if code else None
    if codes and codes - set(CODES):
        raise UsageError(
            f"unknown code(s) {sorted(codes - set(CODES))} (known: {', '.join(CODES)})", field="--code"
        )
    if tool and (unknown := sorted(set(tool) - set(cs.tools))):
        raise UsageError(
            f"no such tool in the contract set: {', '.join(unknown)}", field="--tool", source=str(path)
        )
    rules = [
        r
        for r in cs.all_rules()
        if (tool is None or r.tool in tool) and (codes is None or r.code in codes) and (r.in_full or by_fold)
    ]
    report = None
    if by_fold:
        with phase(quiet or plain or as_json, "fold report"):
            report = fold_report(cs, Corpus.open(corpus) if corpus is not None else None, rules)
    if as_json:
        items = []
        for i, r in enumerate(rules):
            d = _rule_json(r)
            if report is not None:
                fp = report[i]
                d["folds"] = list(fp.folds)
                d["tasks_min"] = fp.tasks_min
                d["thin"] = fp.thin
                if fp.heldout_calls is not None:
                    d["heldout"] = {
                        "calls": fp.heldout_calls,
                        "violations": fp.heldout_violations,
                        "rate": fp.heldout_rate,
                    }
            items.append(d)
        _dump(items)
        return
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
        if corpus is not None:
            cols.append(Column("held-out", "num"))
    grid = Grid(cols, section=0)
    for i, r in enumerate(rules):
        params = describe_params(r)
        path_s = r.paths[0]
        row: list[str | int | None] = [
            r.tool,
            r.code,
            path_s or '""',
            params,
            f"{r.support.calls:,} / {r.support.tasks:,}"
            if not plain
            else f"{r.support.calls}/{r.support.tasks}",
            "both" if len(r.source) > 1 else r.source[0],
        ]
        if report is not None:
            fp = report[i]
            every = len(fp.folds) == cs.k
            row.append(
                ("all" if every else ",".join(map(str, fp.folds)) or "-") + ("" if r.in_full else " only")
            )
            row.append(f"{fp.tasks_min:,}" + (" thin" if fp.thin else ""))
            if corpus is not None:
                rate = fp.heldout_rate
                row.append("-" if rate is None else f"{fp.heldout_violations}/{fp.heldout_calls} {rate:.1%}")
        grid.add_row(*row)
    show(out, grid, plain=plain)
    if quiet or plain:  # the notes under the table are for people; the table is the data
        return
    shown = len(rules)
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

    del quiet  # accepted everywhere (issue 22); diff writes nothing to stderr
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
