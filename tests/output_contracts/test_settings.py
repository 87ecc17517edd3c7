"""The one resolver: command line > config file > built-in defaults, for every kind of value.

`output_contracts.settings.resolve` builds a frozen settings object from the options a command was
given, the project config (`load_config`) and the defaults. These tests use a settings class of their
own that holds one field of each kind the config knows (int, float, path, paths, table, bool, choice);
tests/cli/test_command_settings.py checks each command's real settings through the command line.
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

from output_contracts.config import DEFAULTS, load_config
from output_contracts.errors import ConfigError, UsageError
from output_contracts.settings import COMMAND_LINE, Settings, resolve, setting, source_of


class Clean(StrEnum):
    ok = "ok"
    reward = "reward"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Kinds(Settings):
    """One field of each kind of config value, plus a plain option."""

    folds: int = setting("mine.folds")
    rate: float | None = setting("mine.max_violation_rate")
    corpus: Path | None = setting("paths.corpus")
    traces: list[Path] | None = setting("paths.traces")
    min_support: dict[str, int] | None = setting("mine.min_support", from_option=lambda items: dict(items))
    verify: bool = setting("mine.verify")
    clean: str = setting("mine.clean")
    quiet: bool


#: kind -> (field, config line, the config's value, a command-line value, the built-in default)
CASES: dict[str, tuple[str, str, Any, Any, Any]] = {
    "int": ("folds", "[mine]\nfolds = 4\n", 4, 7, 1),
    "float": ("rate", "[mine]\nmax_violation_rate = 0.01\n", 0.01, 0.2, None),
    "path": ("corpus", '[paths]\ncorpus = "out/corpus"\n', "out/corpus", Path("/elsewhere"), None),
    "paths": ("traces", '[paths]\ntraces = ["a", "b"]\n', ["a", "b"], [Path("/x")], None),
    "table": ("min_support", "[mine]\nmin_support = {DOMAIN = 60}\n", {"DOMAIN": 60}, [("TYPE", 5)], None),
    "bool": ("verify", "[mine]\nverify = true\n", True, True, False),
    "choice": ("clean", '[mine]\nclean = "reward"\n', "reward", Clean.reward, "ok"),
}


def _config(tmp_path: Path, text: str = "") -> Any:
    (tmp_path / "contracts.toml").write_text(text)
    return load_config(tmp_path)


def _options(**given: Any) -> dict[str, Any]:
    return {"quiet": False, **given}


def _expected(kind: str, value: Any, base: Path) -> Any:
    """A config value as the resolver hands it on: paths resolved against the config file's folder."""
    if kind == "path":
        return (base / value).resolve()
    if kind == "paths":
        return [(base / v).resolve() for v in value]
    return value


@pytest.mark.parametrize("kind", sorted(CASES))
def test_default_when_neither_option_nor_config(tmp_path: Path, kind: str) -> None:
    name, _, _, _, default = CASES[kind]
    s = resolve(Kinds, _config(tmp_path), _options())
    assert getattr(s, name) == default
    assert s.origin(name) == "default"


@pytest.mark.parametrize("kind", sorted(CASES))
def test_config_beats_default(tmp_path: Path, kind: str) -> None:
    name, line, value, _, _ = CASES[kind]
    s = resolve(Kinds, _config(tmp_path, line), _options())
    assert getattr(s, name) == _expected(kind, value, tmp_path)
    assert s.origin(name) == str(tmp_path / "contracts.toml")


@pytest.mark.parametrize("kind", sorted(CASES))
def test_option_beats_config(tmp_path: Path, kind: str) -> None:
    name, line, _, given, _ = CASES[kind]
    s = resolve(Kinds, _config(tmp_path, line), _options(**{name: given}))
    expected = {"table": {"TYPE": 5}, "choice": "reward"}.get(kind, given)
    assert getattr(s, name) == expected
    assert s.origin(name) == COMMAND_LINE


def test_an_enum_option_is_stored_as_the_value_the_config_holds(tmp_path: Path) -> None:
    s = resolve(Kinds, _config(tmp_path), _options(clean=Clean.reward))
    assert type(s.clean) is str and s.clean == "reward"


@pytest.mark.parametrize("empty", [None, [], ()])
def test_an_empty_option_is_not_given(tmp_path: Path, empty: Any) -> None:
    s = resolve(Kinds, _config(tmp_path, '[paths]\ntraces = ["t"]\n'), _options(traces=empty))
    assert s.traces == [(tmp_path / "t").resolve()]


def test_false_and_zero_options_are_given(tmp_path: Path) -> None:
    """Only None and empty lists mean "not given": 0 and False on the command line win."""
    cfg = _config(tmp_path, "[mine]\nmax_violation_rate = 0.5\nverify = true\n")
    s = resolve(Kinds, cfg, _options(rate=0.0, verify=False))
    assert (s.rate, s.verify) == (0.0, False)
    assert s.origin("rate") == s.origin("verify") == COMMAND_LINE


def test_relative_config_paths_resolve_against_the_config_folder(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "contracts.toml").write_text('[paths]\ncorpus = "c"\ntraces = "t"\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    s = resolve(Kinds, load_config(), _options())
    assert s.corpus == (tmp_path / "c").resolve()
    assert s.traces == [(tmp_path / "t").resolve()]  # one path is a list of one
    abs_ = tmp_path / "abs"
    (tmp_path / "contracts.toml").write_text(f'[paths]\ncorpus = "{abs_}"\n')
    assert resolve(Kinds, load_config(), _options()).corpus == abs_


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sources(Settings):
    """`many`, fallback keys, required settings and conversions."""

    sources: list[str] = setting(
        "paths.corpus",
        "paths.traces",
        many=True,
        from_config=lambda ps: [str(p) for p in ps],
        missing="no SRC",
    )
    output: Path = setting("paths.contracts", required="contract set (-o)")
    registry: Path | None = setting("paths.registry", what="registry (--registry) for a corpus SRC")


def test_the_first_key_set_wins_and_many_makes_a_list(tmp_path: Path) -> None:
    both = _config(tmp_path, '[paths]\ncorpus = "c"\ntraces = ["t1", "t2"]\ncontracts = "k.json"\n')
    s = resolve(Sources, both, {})
    assert s.sources == [str((tmp_path / "c").resolve())]
    assert s.origin("sources") == str(tmp_path / "contracts.toml")
    traces = _config(tmp_path, '[paths]\ntraces = ["t1", "t2"]\ncontracts = "k.json"\n')
    assert resolve(Sources, traces, {}).sources == [str((tmp_path / t).resolve()) for t in ("t1", "t2")]
    given = resolve(Sources, traces, {"sources": ["-"]})
    assert given.sources == ["-"] and given.origin("sources") == COMMAND_LINE


def test_a_required_setting_given_nowhere_is_a_usage_error_naming_option_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        resolve(Sources, _config(tmp_path, '[paths]\ncorpus = "c"\n'), {})
    assert e.value.render() == (
        "error[E_USAGE]: no contract set (-o) given: pass it on the command line or set 'contracts' "
        "under [paths] in contracts.toml"
    )
    with pytest.raises(ConfigError, match=r"^error\[E_USAGE\]: no SRC$"):
        resolve(Sources, _config(tmp_path, '[paths]\ncontracts = "k"\n'), {})


def test_require_asks_for_a_setting_only_when_the_command_needs_it(tmp_path: Path) -> None:
    s = resolve(Sources, _config(tmp_path, '[paths]\ncorpus = "c"\ncontracts = "k"\n'), {})
    assert s.registry is None  # not demanded when the object is built
    with pytest.raises(
        ConfigError, match=r"no registry \(--registry\) for a corpus SRC given: .* 'registry'"
    ):
        s.require("registry")
    with_reg = resolve(
        Sources, _config(tmp_path, '[paths]\ncorpus = "c"\ncontracts = "k"\nregistry = "r"\n'), {}
    )
    assert with_reg.require("registry") == (tmp_path / "r").resolve()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Checked(Settings):
    """Checks run in order: the options alone, then the required settings, then the resolved values."""

    output: Path = setting("paths.contracts", required="contract set (-o)")
    folds: int = setting("mine.folds")
    engine: str

    def check_given(self) -> None:
        if self.engine == "bogus":
            raise UsageError("--engine bogus")

    def check(self) -> None:
        if self.folds > 9:
            raise UsageError("--folds too many")


def test_checks_run_in_order(tmp_path: Path) -> None:
    empty = _config(tmp_path)
    with pytest.raises(UsageError, match="--engine bogus"):  # before the missing contract set
        resolve(Checked, empty, {"engine": "bogus", "folds": 10})
    with pytest.raises(ConfigError, match="no contract set"):  # before the resolved values' checks
        resolve(Checked, empty, {"engine": "local", "folds": 10})
    with pytest.raises(UsageError, match="--folds too many"):
        resolve(Checked, empty, {"engine": "local", "folds": 10, "output": Path("k")})
    ok = resolve(
        Checked,
        _config(tmp_path, "[mine]\nfolds = 12\n"),
        {"engine": "local", "folds": 3, "output": Path("k")},
    )
    assert ok.folds == 3


def test_settings_are_frozen(tmp_path: Path) -> None:
    s = resolve(Kinds, _config(tmp_path), _options())
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.folds = 3  # type: ignore[misc]


def test_options_and_fields_must_match(tmp_path: Path) -> None:
    """A command that passes an option its settings do not hold, or lacks one they need, is a bug."""
    cfg = _config(tmp_path)
    with pytest.raises(TypeError, match="no field for option"):
        resolve(Kinds, cfg, _options(bogus=1))
    with pytest.raises(TypeError, match=r"Kinds\.quiet is neither an option nor a config setting"):
        resolve(Kinds, cfg, {})


def test_every_declared_key_is_a_config_setting() -> None:
    for cls in (Kinds, Sources, Checked):
        for f in dataclasses.fields(cls):
            src = source_of(f)
            assert src is None or all(k in DEFAULTS for k in src.keys)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("[mine]\nfolds = 300\n", "'mine.folds' must be between 1 and 255, got 300"),
        ("[mine]\nmax_violation_rate = 1.5\n", "'mine.max_violation_rate' must be between 1e-12 and 1"),
        ("[mine]\nclean = 'dirty'\n", "'mine.clean' must be one of ok, reward, got 'dirty'"),
        ("[mine]\nverify = 1\n", "'mine.verify' must be true or false, got 1"),
        ("[mine]\nmin_support = {DOMAIN = '60'}\n", "'mine.min_support' must be a table of integers"),
        ("[paths]\ncorpus = 3\n", "'paths.corpus' must be a path string, got 3"),
        ("[paths]\ntraces = [1]\n", "'paths.traces' must be a path or a list of paths, got [1]"),
    ],
)
def test_bad_config_values_fail_before_resolving_naming_file_and_key(
    tmp_path: Path, body: str, says: str
) -> None:
    (tmp_path / "contracts.toml").write_text(body)
    with pytest.raises(ConfigError) as e:
        resolve(Kinds, load_config(tmp_path), _options())
    assert says in e.value.render()
    assert e.value.render().startswith(f"error[E_CONFIG]: {tmp_path / 'contracts.toml'}: ")
