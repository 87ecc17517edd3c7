"""Project configuration: discovery upwards, precedence, path resolution, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from contracts.cli.app import app
from contracts.config import load_config
from contracts.errors import ConfigError


def test_defaults_without_file(tmp_path: Path) -> None:
    cfg = load_config(tmp_path)
    assert cfg.file is None
    assert cfg.get("mine.seed") == 13
    assert cfg.settings["mine.seed"].origin == "default"


def test_found_upwards_and_paths_relative_to_file(tmp_path: Path) -> None:
    (tmp_path / "contracts.toml").write_text('[paths]\ncorpus = "out/corpus"\n[mine]\nfolds = 5\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    cfg = load_config(deep)
    assert cfg.file == tmp_path / "contracts.toml"
    assert cfg.path("paths.corpus") == (tmp_path / "out" / "corpus").resolve()
    assert cfg.get("mine.folds") == 5
    assert cfg.get("mine.folds", 3) == 3  # command line wins


def test_pyproject_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname="x"\n[tool.contracts.mine]\nseed = 7\n')
    assert load_config(tmp_path).get("mine.seed") == 7


def test_pyproject_without_table_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname="x"\n')
    assert load_config(tmp_path).file is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[mine]\nfolds = 'five'\n", "'mine.folds' must be an integer"),
        ("[mine]\nfoldz = 5\n", "unknown setting 'mine.foldz'"),
        ("[mine\n", "cannot parse"),
    ],
)
def test_bad_config_names_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / "contracts.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path)
    assert needle in e.value.render()
    assert str(tmp_path / "contracts.toml") in e.value.render()


def test_config_command_shows_origin(tmp_path: Path) -> None:
    cfg = tmp_path / "contracts.toml"
    cfg.write_text("[mine]\nfolds = 4\n")
    result = CliRunner().invoke(app, ["--config", str(cfg), "config", "--json"])
    assert result.exit_code == 0, result.output
    assert '"origin": "' + str(cfg) + '"' in result.output
    bad = CliRunner().invoke(app, ["--config", str(tmp_path / "missing.toml"), "config"])
    assert bad.exit_code == 2
    assert "error[E_CONFIG]" in bad.output
