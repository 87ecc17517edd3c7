"""Each command's settings, as its body receives them, through the real command line.

Every command that reads the project config resolves its options once (`resolved(XSettings,
locals())`) and hands the frozen object to its body. Here each body is replaced by one that keeps what
it was given, and each command runs three times: with a config file that sets every setting (and no
options), with options that override them, and with an empty config file (the built-in defaults).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from output_contracts.cli import (
    audit_cmd,
    check_cmd,
    compare_cmd,
    ingest_cmd,
    mine_cmd,
    plan_cmd,
    proxy_cmd,
    repair_cmd,
)
from output_contracts.cli.app import app
from output_contracts.settings import COMMAND_LINE, Settings, source_of

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
[paths]
traces = ["t1", "t2"]
corpus = "data/corpus"
registry = "tools.json"
contracts = "out/contracts.json"
ledger = "out/ledger"
repair_ledger = "out/repair-ledger"
cases = "out/cases.jsonl"
targets = "out/targets.jsonl"
reports = "out/reports"

[mine]
folds = 3
seed = 7
clean = "reward"
max_domain = 6
max_violation_rate = 0.01
min_support = {DOMAIN = 60}
part_rows = 1000
source = "mined"
verify = true

[check]
encoder = "v1"

[audit]
folds = 4
bootstrap = 50
max_fire_rate = 0.1
max_spurious_per_100 = 2.5
min_detection = 0.5
min_coverage = 0.25

[repair]
policy = "precomputed"
max_ops = 3
max_attempts = 4
seed = 11
"""

#: A config path as the settings hold it: resolved against the config file's folder (`{p}` below).
P = "{p}"

GATES = {"max_fire_rate": 0.1, "max_spurious_per_100": 2.5, "min_detection": 0.5, "min_coverage": 0.25}
GIVEN_GATES = ["--max-fire-rate", "0.3", "--max-spurious-per-100", "1", "--min-detection", "0.9"]
MINING = {"clean": "reward", "max_domain": 6, "min_support": {"DOMAIN": 60}, "max_violation_rate": 0.01}


def _p(rel: str) -> str:
    return P + "/" + rel


#: command -> (module, body, argv with nothing to override, what the config gives, argv overriding,
#: what the options give). Expected paths written `{p}/...` are the config file's folder.
CASES: dict[str, tuple[Any, str, list[str], dict[str, Any], list[str], dict[str, Any]]] = {
    "ingest": (
        ingest_cmd,
        "_ingest",
        [],
        {"output": _p("data/corpus"), "sources": [_p("t1"), _p("t2")], "registry": _p("tools.json")},
        ["a.jsonl", "-o", "c2", "-r", "r.json"],
        {"output": Path("c2"), "sources": ["a.jsonl"], "registry": Path("r.json")},
    ),
    "corpus info": (
        ingest_cmd,
        "_info",
        [],
        {"corpus": _p("data/corpus")},
        ["c2"],
        {"corpus": Path("c2")},
    ),
    "corpus verify": (
        ingest_cmd,
        "_verify",
        [],
        {"corpus": _p("data/corpus")},
        ["c2"],
        {"corpus": Path("c2")},
    ),
    "mine": (
        mine_cmd,
        "_mine",
        [],
        {
            "output": _p("out/contracts.json"),
            "sources": [_p("data/corpus")],
            "registry": _p("tools.json"),
            "folds": 3,
            "seed": 7,
            "rule_source": "mined",
            "part_rows": 1000,
            "verify": True,
            **MINING,
        },
        [
            *("c2", "-o", "k.json", "-r", "r.json", "--folds", "2", "--seed", "5", "--min-support", "type=9"),
            *("--max-domain", "4", "--clean", "ok", "--max-violation-rate", "0.2", "--source", "all"),
            *("--part-rows", "10"),
        ],
        {
            "output": Path("k.json"),
            "sources": [Path("c2")],
            "registry": Path("r.json"),
            "folds": 2,
            "seed": 5,
            "min_support": {"TYPE": 9},
            "max_domain": 4,
            "clean": "ok",
            "max_violation_rate": 0.2,
            "rule_source": "all",
            "part_rows": 10,
        },
    ),
    "rules": (
        mine_cmd,
        "_rules",
        [],
        {"contracts": _p("out/contracts.json")},
        ["k.json"],
        {"contracts": Path("k.json")},
    ),
    "check": (
        check_cmd,
        "_check",
        [],
        {"contracts_path": _p("out/contracts.json"), "sources": [_p("data/corpus")], "encoder": "v1"},
        ["a.jsonl", "-", "-c", "k.json", "--encoder", "v2"],
        {"contracts_path": Path("k.json"), "sources": ["a.jsonl", "-"], "encoder": "v2"},
    ),
    "proxy": (
        proxy_cmd,
        "_proxy",
        ["--", "server"],
        {"contracts_path": _p("out/contracts.json")},
        ["-c", "k.json", "--", "server"],
        {"contracts_path": Path("k.json")},
    ),
    "audit": (
        audit_cmd,
        "_audit",
        [],
        {
            "sources": [_p("data/corpus")],
            "folds": 4,
            "seed": 7,
            "bootstrap": 50,
            "ledger": _p("out/ledger"),
            "registry": _p("tools.json"),
            "rule_source": "mined",
            "part_rows": 1000,
            "gates": GATES,
            "report_files": (_p("out/reports/audit.json"), _p("out/reports/audit.md")),
            **MINING,
        },
        [
            *("s1", "s2", "--folds", "2", "--seed", "5", "--bootstrap", "9", "--ledger", "L", "-r", "r.json"),
            *("--source", "schema", "-o", "a.json", *GIVEN_GATES, "--min-coverage", "0.8"),
        ],
        {
            "sources": [Path("s1"), Path("s2")],
            "folds": 2,
            "seed": 5,
            "bootstrap": 9,
            "ledger": Path("L"),
            "registry": Path("r.json"),
            "rule_source": "schema",
            "gates": {
                "max_fire_rate": 0.3,
                "max_spurious_per_100": 1.0,
                "min_detection": 0.9,
                "min_coverage": 0.8,
            },
            "report_files": (Path("a.json"), None),
            **MINING,  # the mining an audit runs takes its thresholds from [mine] alone
        },
    ),
    "audit-score": (
        audit_cmd,
        "_audit_score",
        ["led"],
        {"corpus": _p("data/corpus"), "bootstrap": 50, "gates": GATES},
        ["led", "--corpus", "c2", "--bootstrap", "9", *GIVEN_GATES],
        {
            "corpus": Path("c2"),
            "bootstrap": 9,
            "gates": {**GATES, "max_fire_rate": 0.3, "max_spurious_per_100": 1.0, "min_detection": 0.9},
        },
    ),
    "inject": (
        audit_cmd,
        "_inject",
        ["a.jsonl", "-o", "b.jsonl"],
        {"seed": 7},
        ["a.jsonl", "-o", "b.jsonl", "--seed", "5"],
        {"seed": 5},
    ),
    "compare": (
        compare_cmd,
        "_compare",
        ["base", "mon"],
        {"bootstrap": 50, "seed": 7},
        ["base", "mon", "--bootstrap", "9", "--seed", "5"],
        {"bootstrap": 9, "seed": 5},
    ),
    "repair-cases": (
        repair_cmd,
        "_repair_cases",
        [],
        {
            "src": _p("data/corpus"),
            "output": _p("out/cases.jsonl"),
            "targets": _p("out/targets.jsonl"),
            "registry": _p("tools.json"),
            "seed": 11,
        },
        ["src", "-o", "c.jsonl", "--targets", "t.jsonl", "-r", "r.json", "--seed", "5"],
        {
            "src": Path("src"),
            "output": Path("c.jsonl"),
            "targets": Path("t.jsonl"),
            "registry": Path("r.json"),
            "seed": 5,
        },
    ),
    "repair-replay": (
        repair_cmd,
        "_repair_replay",
        [],
        {
            "cases_file": _p("out/cases.jsonl"),
            "ledger": _p("out/repair-ledger"),
            "policy": "precomputed",
            "max_ops": 3,
            "max_attempts": 4,
            "seed": 11,
        },
        [
            *("c.jsonl", "--ledger", "L", "--policy", "heuristic", "--max-ops", "1", "--max-attempts", "5"),
            *("--seed", "5"),
        ],
        {
            "cases_file": Path("c.jsonl"),
            "ledger": Path("L"),
            "policy": "heuristic",
            "max_ops": 1,
            "max_attempts": 5,
            "seed": 5,
        },
    ),
    "repair-score": (
        repair_cmd,
        "_repair_score",
        [],
        {"ledger": _p("out/repair-ledger"), "targets": _p("out/targets.jsonl"), "seed": 11, "bootstrap": 50},
        ["L", "--targets", "t.jsonl", "--seed", "5", "--bootstrap", "9"],
        {"ledger": Path("L"), "targets": Path("t.jsonl"), "seed": 5, "bootstrap": 9},
    ),
    "plan-check": (
        plan_cmd,
        "_plan_check",
        ["plan.json"],
        {"registry": _p("tools.json")},
        ["plan.json", "-r", "r.json"],
        {"registry": Path("r.json")},
    ),
    "registry infer": (
        plan_cmd,
        "_registry_infer",
        [],
        {"corpus": _p("data/corpus"), "seed": 7, **MINING},
        ["c2"],
        {"corpus": Path("c2")},
    ),
    "registry check": (
        plan_cmd,
        "_registry_check",
        ["c2"],
        {"registry": _p("tools.json"), "corpus": Path("c2")},
        ["r.json", "c2"],
        {"registry": Path("r.json"), "corpus": Path("c2")},
    ),
    "tools export": (
        plan_cmd,
        "_tools_export",
        ["--target", "openai"],
        {"registry": _p("tools.json")},
        ["--target", "openai", "-r", "r.json"],
        {"registry": Path("r.json")},
    ),
}


def _run(monkeypatch: Any, config: Path, command: str, argv: list[str]) -> Settings:
    """Run `command` through the real app with body replaced; the settings object the body received."""
    module, body, *_ = CASES[command]
    got: list[Settings] = []
    monkeypatch.setattr(module, body, got.append)
    result = CliRunner().invoke(app, ["--config", str(config), *command.split(), *argv])
    assert result.exit_code == 0, result.output
    assert len(got) == 1
    return got[0]


def _value(s: Settings, name: str) -> Any:
    return getattr(s, name)


def _expected(value: Any, folder: Path) -> Any:
    if isinstance(value, str) and value.startswith(P + "/"):
        return (folder / value[len(P) + 1 :]).resolve()
    if isinstance(value, list | tuple):
        return type(value)(_expected(v, folder) for v in value)
    return value


@pytest.fixture
def project(tmp_path: Path, monkeypatch: Any) -> Path:
    """A config file setting everything, read from another working directory."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "contracts.toml").write_text(CONFIG)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder / "contracts.toml"


@pytest.mark.parametrize("command", sorted(CASES))
def test_config_gives_what_the_command_line_does_not(project: Path, monkeypatch: Any, command: str) -> None:
    _, _, argv, from_config, _, _ = CASES[command]
    s = _run(monkeypatch, project, command, argv)
    folder = project.parent
    for name, raw in from_config.items():
        want = _expected(raw, folder)
        if name == "sources" and command == "check":  # check reads SRC as text (`-` is stdin)
            want = [str(w) for w in want]
        assert _value(s, name) == want, name
        if name in _config_backed(s) and not isinstance(raw, Path):
            assert s.origin(name) == str(project), name


def _config_backed(s: Settings) -> set[str]:
    return {f.name for f in dataclasses.fields(s) if source_of(f) is not None}


@pytest.mark.parametrize("command", sorted(CASES))
def test_options_beat_the_config(project: Path, monkeypatch: Any, command: str) -> None:
    _, _, _, _, argv, from_options = CASES[command]
    s = _run(monkeypatch, project, command, argv)
    for name, want in from_options.items():
        assert _value(s, name) == _expected(want, project.parent), name
        if name in _config_backed(s) and name not in MINING:
            assert s.origin(name) == COMMAND_LINE, name


def test_origins_say_where_each_value_came_from(project: Path, monkeypatch: Any) -> None:
    s = _run(monkeypatch, project, "mine", ["--folds", "2"])
    assert s.origin("folds") == COMMAND_LINE
    assert s.origin("seed") == str(project)
    empty = project.parent / "empty.toml"
    empty.write_text("")
    d = _run(monkeypatch, empty, "mine", ["c", "-o", "k.json"])
    assert (d.origin("seed"), d.origin("sources"), d.origin("output")) == (
        "default",
        COMMAND_LINE,
        COMMAND_LINE,
    )


#: command -> (argv an empty config needs, the built-in defaults it then receives)
DEFAULTS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "mine": (
        ["c", "-o", "k.json"],
        {
            "folds": 1,
            "seed": 13,
            "clean": "ok",
            "max_domain": 8,
            "min_support": None,
            "max_violation_rate": None,
            "rule_source": "all",
            "part_rows": None,
            "verify": False,
            "registry": None,
        },
    ),
    "audit": (
        ["s"],
        {
            "folds": 5,
            "seed": 13,
            "bootstrap": 1000,
            "ledger": None,
            "report_files": (None, None),
            "gates": dict.fromkeys(GATES),
        },
    ),
    "check": (["a.jsonl", "-c", "k.json"], {"encoder": "v2"}),
    "repair-replay": (
        ["c.jsonl", "--ledger", "L"],
        {"policy": "heuristic", "max_ops": 2, "max_attempts": 2, "seed": 13},
    ),
    "repair-score": (["L", "--targets", "t.jsonl"], {"seed": 13, "bootstrap": 1000}),
    "compare": (["b", "m"], {"seed": 13, "bootstrap": 1000}),
}


@pytest.mark.parametrize("command", sorted(DEFAULTS))
def test_built_in_defaults_without_config_values(tmp_path: Path, monkeypatch: Any, command: str) -> None:
    empty = tmp_path / "contracts.toml"
    empty.write_text("")
    argv, want = DEFAULTS[command]
    s = _run(monkeypatch, empty, command, argv)
    for name, value in want.items():
        assert _value(s, name) == value, name


@pytest.mark.parametrize(
    ("body", "argv", "says"),
    [
        ("[mine]\nfolds = 0\n", ["mine", "c", "-o", "k"], "'mine.folds' must be between 1 and 255, got 0"),
        ("[audit]\nmin_detection = 2\n", ["audit", "s"], "'audit.min_detection' must be between 0 and 1"),
        (
            "[repair]\npolicy = 'llm'\n",
            ["repair-replay", "c", "--ledger", "L"],
            "'repair.policy' must be one of",
        ),
        ("[check]\nencoder = 'v9'\n", ["check", "a", "-c", "k"], "'check.encoder' must be one of"),
        ("[mine]\nmin_support = {X = 'a'}\n", ["mine", "c", "-o", "k"], "must be a table of integers"),
    ],
)
def test_a_bad_config_value_is_one_line_naming_file_and_key(
    tmp_path: Path, body: str, argv: list[str], says: str
) -> None:
    """Even when the command line gives the same setting: the file is wrong, and says so."""
    cfg = tmp_path / "contracts.toml"
    cfg.write_text(body)
    result = CliRunner().invoke(app, ["--config", str(cfg), *argv])
    assert result.exit_code == 2
    assert result.output.startswith(f"error[E_CONFIG]: {cfg}: ") and says in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_required_setting_given_nowhere_names_the_option_and_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "contracts.toml"
    cfg.write_text("")
    result = CliRunner().invoke(app, ["--config", str(cfg), "repair-score"])
    assert result.exit_code == 2
    assert result.output == (
        "error[E_USAGE]: no ledger folder (LEDGER) given: pass it on the command line or set "
        "'repair_ledger' under [paths] in contracts.toml\n"
    )


def test_every_command_that_reads_the_config_is_covered() -> None:
    """Each Typer function that resolves settings appears in CASES, by its body."""
    bodies = {(module.__name__, body) for module, body, *_ in CASES.values()}
    found = set()
    for module in (audit_cmd, check_cmd, compare_cmd, ingest_cmd, mine_cmd, plan_cmd, proxy_cmd, repair_cmd):
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.args
                and isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Name)
                and node.args[0].func.id == "resolved"
            ):
                found.add((module.__name__, node.func.id))
    assert found == bodies


def test_no_command_merges_options_and_config_itself() -> None:
    """The config is read in one place: `resolved` (and `contracts config`, which prints it)."""
    offenders = []
    for f in sorted((REPO / "cli").glob("*.py")):
        if f.name in ("common.py", "settings.py", "config_cmd.py"):
            continue
        text = f.read_text(encoding="utf-8")
        for needle in ("config()", "cfg.", "load_config", ".require_path("):
            if needle in text:
                offenders.append(f"{f.name}: {needle}")
    assert offenders == []
