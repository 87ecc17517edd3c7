"""Project configuration: discovery upwards, path resolution, clear errors (the command line on top of it:
tests/output_contracts/test_settings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from output_contracts.cli.app import app
from output_contracts.config import load_config
from output_contracts.errors import ConfigError


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
    assert cfg.settings["mine.folds"].origin == str(tmp_path / "contracts.toml")


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


@pytest.mark.parametrize(
    "body,says",
    [
        ("[mine]\nfolds = -3\n", "'mine.folds' must be between 1 and 255, got -3"),
        ("[audit]\nfolds = 0\n", "'audit.folds' must be between 1 and 255, got 0"),
        ("[audit]\nmax_fire_rate = nan\n", "'audit.max_fire_rate' must be a finite number, got nan"),
        ("[audit]\nmax_spurious_per_100 = inf\n", "must be a finite number"),
        (
            "[audit]\nbootstrap = 100000000000000000000000\n",
            "'audit.bootstrap' must be between 0 and 1,000,000",
        ),
        ("[audit]\nmin_detection = 1.5\n", "'audit.min_detection' must be between 0 and 1, got 1.5"),
        ("[mine]\nclean = 'bogus'\n", "'mine.clean' must be one of ok, reward, got 'bogus'"),
        ("[mine]\nsource = 'web'\n", "'mine.source' must be one of all, mined, schema"),
        ("[check]\nencoder = 'v9'\n", "'check.encoder' must be one of v1, v2"),
        ("[repair]\nmax_ops = 0\n", "'repair.max_ops' must be >= 1, got 0"),
        ("[mine]\nmin_support = 5\n", "'mine.min_support' must be a table, got 5"),
        (
            "[mine]\nmin_support = {DOMAIN = true}\n",
            "'mine.min_support' must be a table of integers, got {'DOMAIN': True}",
        ),
    ],
)
def test_config_values_follow_the_options_rules(tmp_path: Path, body: str, says: str) -> None:
    (tmp_path / "contracts.toml").write_text(body)
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path)
    assert says in e.value.render() and e.value.source == str(tmp_path / "contracts.toml")
