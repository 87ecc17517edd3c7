"""One option vocabulary across commands: the same name means the same thing everywhere.

Walks the Click command tree of the Typer app and checks every command's options: a name has one
meaning (flag or value, repeatable or not, the same short alias, the same metavar) wherever it appears;
`--json` is always the flag "JSON on stdout"; `--folds` is the fold count and `--fold` a fold index;
every command has `-q/--quiet`; no help shows a Python type (`<path>`, `<list[str]>`, `<int range>`).
Then, through the entry point: old spellings are one-line usage errors naming the new one, and Click's
own usage errors are one `error[E_USAGE]:` line, exit 2.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.main import get_command
from typer.testing import CliRunner

from output_contracts.cli.app import app

#: A Python type as Typer shows it when no metavar is given.
PY_TYPE = re.compile(r"<(str|int|float|bool|path|file|list\[.*\]|tuple.*|int range|float range|datetime)>")
#: Options whose value is a path: their metavar says what kind (a file or a folder).
PATHLIKE = {"FILE", "DIR"}


def _commands() -> list[tuple[str, Any, Any]]:
    """(`audit`, the command, its context) for every leaf command, sub-commands included."""
    from typer import _click as click

    root = get_command(app)
    found: list[tuple[str, Any, Any]] = []

    def walk(cmd: Any, path: list[str], ctx: Any) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in sorted(subs.items()):
                walk(sub, [*path, name], click.Context(sub, info_name=name, parent=ctx))
        else:
            found.append((" ".join(path), cmd, ctx))

    walk(root, [], click.Context(root, info_name="contracts"))
    return found


COMMANDS = _commands()


def _options(cmd: Any) -> list[Any]:
    return [p for p in cmd.params if p.param_type_name == "option" and not p.hidden and p.name != "help"]


def _meaning(p: Any, ctx: Any) -> tuple[Any, ...]:
    """What a name means: its aliases, flag or value, repeatable or not, and the metavar shown (a file
    and a folder are both paths: `-o FILE` of most commands, `-o DIR` of ingest; choices are a choice,
    their names checked apart)."""
    metavar = None if p.is_flag else p.display_type_rich(ctx)
    if metavar in PATHLIKE:
        metavar = "FILE|DIR"
    elif metavar is not None and metavar.startswith("<") and "|" in metavar:
        metavar = "<choice>"
    return (tuple(sorted(p.opts + p.secondary_opts)), bool(p.is_flag), bool(p.multiple), metavar)


def test_the_walk_finds_every_command() -> None:
    names = {name for name, _, _ in COMMANDS}
    assert {"audit", "audit-score", "check", "mine", "rules", "diff", "ledger show", "tools export"} <= names
    assert len(names) >= 29


def test_same_name_same_meaning_everywhere() -> None:
    seen: dict[str, dict[tuple[Any, ...], list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, cmd, ctx in COMMANDS:
        for p in _options(cmd):
            for opt in p.opts + p.secondary_opts:
                seen[opt][_meaning(p, ctx)].append(name)
    differing = {opt: dict(m) for opt, m in seen.items() if len(m) > 1}
    assert differing == {}, "one option name, several meanings:\n" + "\n".join(
        f"{opt}: {m}" for opt, m in differing.items()
    )
    # the shared ones, as they are declared in cli/common.py
    assert set(seen["--contracts"]) == {(("--contracts", "-c"), False, False, "FILE|DIR")}
    assert set(seen["--registry"]) == {(("--registry", "-r"), False, False, "FILE|DIR")}
    assert set(seen["--output"]) == {(("--output", "-o"), False, False, "FILE|DIR")}
    assert set(seen["--format"]) == {(("--format", "-f"), False, False, "FORMAT")}
    assert len(seen["--contracts"]) == 1 and sum(map(len, seen["--contracts"].values())) >= 6


def test_json_is_always_a_flag() -> None:
    found = []
    for name, cmd, _ in COMMANDS:
        for p in _options(cmd):
            if "--json" in p.opts:
                found.append(name)
                assert p.is_flag, f"{name}: --json takes a value"
                assert "stdout" in (p.help or ""), f"{name}: --json help does not say where the JSON goes"
    assert {"audit", "audit-score", "repair-score", "mine", "codes", "ledger show"} <= set(found)


def test_folds_is_a_count_and_fold_an_index() -> None:
    folds, fold = [], []
    for name, cmd, ctx in COMMANDS:
        for p in _options(cmd):
            if "--folds" in p.opts:
                folds.append(name)
                assert not p.is_flag and p.display_type_rich(ctx) == "K"
                assert p.type_descriptor.annotation is int and p.min == 1
            if "--fold" in p.opts:
                fold.append(name)
                assert not p.is_flag and p.display_type_rich(ctx) == "F"
                assert "fold F" in (p.help or "")
            assert "-k" not in p.opts or "--kind" in p.opts, f"{name}: -k means --kind only"
    assert sorted(folds) == ["audit", "mine"]
    assert sorted(fold) == ["check", "proxy"]


def test_every_command_has_quiet() -> None:
    missing = [
        name
        for name, cmd, _ in COMMANDS
        if not any(set(p.opts) == {"--quiet", "-q"} and p.is_flag for p in _options(cmd))
    ]
    assert missing == []


def test_no_help_shows_a_python_type() -> None:
    bad = []
    for name, cmd, ctx in COMMANDS:
        for p in cmd.params:
            if p.param_type_name == "argument":
                if p.metavar is None or not re.fullmatch(r"[A-Z0-9_\[\]\- .]+", p.metavar):
                    bad.append((name, p.name, p.metavar))
                continue
            rec = p.get_help_record(ctx)
            if rec and PY_TYPE.search(rec[0]):
                bad.append((name, rec[0]))
        help_text = CliRunner().invoke(app, [*name.split(), "--help"]).output
        bad.extend((name, m.group(0)) for m in PY_TYPE.finditer(help_text))
        assert "{" not in help_text.split("\n", 1)[0], f"{name}: usage line shows Typer's {{ARG}}"
    assert bad == []


def test_output_formats_are_the_shared_names() -> None:
    """`--output-format` takes only ruff's format names (cli/common.py OutputFormat), each command its own."""
    from output_contracts.cli.common import OutputFormat

    names = {f.value for f in OutputFormat}
    for name, cmd, _ in COMMANDS:
        for p in _options(cmd):
            if "--output-format" in p.opts:
                choices = {getattr(c, "value", c) for c in p.type_descriptor.choices}
                assert choices <= names, (name, choices - names)


def test_path_options_say_file_or_folder() -> None:
    """A Path-typed option shows FILE or DIR (never `<path>` nor a bare PATH)."""
    bad, seen = [], 0
    for name, cmd, ctx in COMMANDS:
        for p in _options(cmd):
            if p.type_descriptor.annotation is Path and not p.is_flag:
                seen += 1
                if p.display_type_rich(ctx) not in PATHLIKE:
                    bad.append((name, p.opts, p.display_type_rich(ctx)))
    assert bad == []
    assert seen >= 40  # the walk saw the path options (a type test that matched none would pass)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["audit", "sample_traces/clean", "--fold", "5"], "--fold is now --folds (the number of folds)"),
        (["audit", "-k", "5"], "-k is now --folds (the number of folds)"),
        (["audit", "--fold=5"], "--fold is now --folds"),
        (
            ["audit", "--json", "out.json"],
            "--json is now a flag (the JSON report on stdout): write it to a file",
        ),
        (["audit-score", "L", "--json", "-"], "--json is now a flag"),
        (["repair-score", "--json=r.json"], "--json is now a flag"),
        (["rules", "c.json", "--folds"], "--folds is now --by-fold"),
        (["registry", "infer", "--base", "tools.json"], "--base is now --extend"),
    ],
)
def test_old_spellings_name_the_new_one(argv: list[str], message: str) -> None:
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 2, r.output
    lines = r.output.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("error[E_USAGE]: ") and message in lines[0], r.output
    assert f"see 'contracts {argv[0] if argv[0] != 'registry' else 'registry infer'} --help'" in lines[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "--bogus"], "error[E_USAGE]: No such option: --bogus"),
        (["no-such-command"], "error[E_USAGE]: No such command 'no-such-command'"),
        (["--bogus"], "error[E_USAGE]: No such option: --bogus; see 'contracts --help'"),
        (["ledger", "show"], "error[E_USAGE]: Missing argument 'DIR'; see 'contracts ledger show --help'"),
        (
            ["mine", "--folds", "0"],
            "error[E_USAGE]: Invalid value for '--folds': Input should be greater than",
        ),
        (["check", "--fold"], "error[E_USAGE]: Option '--fold' requires an argument"),
    ],
)
def test_click_usage_errors_are_one_line(argv: list[str], message: str) -> None:
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 2, r.output
    lines = r.output.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith(message), r.output


def test_check_fold_index_still_means_an_index(tmp_path: Path, repo: Path) -> None:
    """`--fold` stays a fold index for check: a fold the set lacks is the library's clear error."""
    cs = repo / "tests" / "golden" / "sample-contracts.json"
    if not cs.is_file():
        pytest.skip("no golden contract set")
    r = CliRunner().invoke(app, ["check", "-c", str(cs), "--fold", "x", str(tmp_path)])
    assert r.exit_code == 2 and "--fold must be a fold number or 'cross', got 'x'" in r.output


def _episodes(repo: Path, n_lines: int) -> list[bytes]:
    """The first `n_lines` records of the sample world's clean traces (whole episodes are not needed)."""
    import gzip

    with gzip.open(repo / "sample_traces" / "clean" / "part-1.jsonl.gz", "rb") as fh:
        return [line for _, line in zip(range(n_lines), fh, strict=False)]


def test_audit_takes_several_sources_and_quiet_silences_stderr_only(tmp_path: Path, repo: Path) -> None:
    """`audit A B` audits the two files ingested together: the same calls as one file holding both;
    `-q` leaves stderr empty while the report still goes where it was asked."""
    lines = _episodes(repo, 1200)
    a, b, both = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "both.jsonl"
    a.write_bytes(b"".join(lines[:600]))
    b.write_bytes(b"".join(lines[600:]))
    both.write_bytes(b"".join(lines))
    common = [
        "--folds",
        "2",
        "--bootstrap",
        "0",
        "--no-in-sample",
        "-r",
        str(repo / "sample_traces" / "tools.json"),
    ]
    r2 = CliRunner().invoke(
        app, ["audit", str(a), str(b), *common, "--ledger", str(tmp_path / "L2"), "--json", "-q"]
    )
    assert r2.exit_code == 0, r2.output
    assert r2.stderr == ""
    two = orjson.loads(r2.stdout)  # --output-format json (as --json): the report on stdout, no tables
    r1 = CliRunner().invoke(
        app, ["audit", str(both), *common, "--ledger", str(tmp_path / "L1"), "-o", str(tmp_path / "r.json")]
    )
    assert r1.exit_code == 0, r1.output
    assert "wrote JSON report" in r1.stderr and "fire rate (organic)" in r1.stdout
    one = orjson.loads((tmp_path / "r.json").read_bytes())
    assert two["population"]["checked"] == one["population"]["checked"] > 1100  # of 1200 calls
    assert two["population"]["tasks"] == one["population"]["tasks"]
    assert two["corpus"]["name"] == "a.jsonl (+1 more)"


def test_rules_quiet_drops_the_notes_not_the_table(tmp_path: Path, repo: Path) -> None:
    cs = repo / "tests" / "golden" / "sample-contracts.json"
    loud = CliRunner().invoke(app, ["rules", str(cs), "--tool", "get_order"])
    quiet = CliRunner().invoke(app, ["rules", str(cs), "--tool", "get_order", "-q"])
    assert loud.exit_code == quiet.exit_code == 0
    assert "rules (support = clean calls / distinct tasks" in loud.stdout
    assert "rules (support" not in quiet.stdout
    assert quiet.stdout.strip() and quiet.stdout in loud.stdout


def test_proxy_fold_is_an_index_too(repo: Path) -> None:
    cs = str(repo / "tests" / "golden" / "sample-contracts.json")
    r = CliRunner().invoke(app, ["proxy", "-c", cs, "--fold", "cross", "--", "true"])
    assert (
        r.exit_code == 2
        and "error[E_USAGE]: --fold must be a fold number (0, 1, ...), got 'cross'" in r.output
    )
    r = CliRunner().invoke(app, ["proxy", "-c", cs, "--fold", "9", "--", "true"])
    assert r.exit_code == 2 and "error[E_FOLD]: contract set has no fold 9 (k = 5)" in r.output


def test_inject_kinds_repeated_or_comma_separated_alike(tmp_path: Path, repo: Path) -> None:
    """`--kinds` means the same in `inject` and `repair-cases`: comma-separated or repeated."""
    src = tmp_path / "s.jsonl"
    src.write_bytes(b"".join(_episodes(repo, 300)))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    common = ["--rate", "0.5", "-q"]
    ra = CliRunner().invoke(
        app, ["inject", str(src), "-o", str(a), "--kinds", "sign_flip", "--kinds", "drop_field", *common]
    )
    rb = CliRunner().invoke(
        app, ["inject", str(src), "-o", str(b), "--kinds", "sign_flip,drop_field", *common]
    )
    assert ra.exit_code == rb.exit_code == 0, ra.output + rb.output
    assert a.read_bytes() == b.read_bytes()
    kinds = {orjson.loads(line)["labels"].get("fault") for line in a.read_bytes().splitlines()}
    assert kinds - {None} == {"sign_flip", "drop_field"}
