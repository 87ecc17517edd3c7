"""Project configuration: `contracts.toml` (or `[tool.contracts]` in `pyproject.toml`), found upwards.

A configured repository can run `contracts mine`, `contracts audit --folds 5` or `contracts repair-replay`
with no path arguments, as a CI job calls them. Precedence: command line > config file > built-in
defaults; this module resolves the last two, and `output_contracts.settings` puts the command line on top,
once per command. Every resolved value remembers where it came from, which `contracts config` prints.
Relative paths in a config file are resolved against that file's folder, so the file means the same thing
from any working directory.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from output_contracts.errors import ConfigError

CONFIG_NAMES = ("contracts.toml", "pyproject.toml")

# Dotted key -> (default, kind). kind "path" values are resolved against the config file's folder.
DEFAULTS: dict[str, tuple[Any, str]] = {
    "paths.traces": (None, "paths"),
    "paths.corpus": (None, "path"),
    "paths.registry": (None, "path"),
    "paths.contracts": (None, "path"),
    "paths.ledger": (None, "path"),
    "paths.repair_ledger": (None, "path"),
    "paths.cases": (None, "path"),
    "paths.targets": (None, "path"),
    "paths.reports": (None, "path"),
    "mine.folds": (1, "int"),
    "mine.seed": (13, "int"),
    "mine.clean": ("ok", "str"),
    "mine.max_domain": (8, "int"),
    "mine.max_violation_rate": (None, "float"),
    "mine.min_support": ({}, "table"),
    "mine.part_rows": (None, "int"),
    "mine.source": ("all", "str"),
    "mine.verify": (False, "bool"),
    "check.encoder": ("v2", "str"),
    "audit.folds": (5, "int"),
    "audit.bootstrap": (1000, "int"),
    "audit.max_fire_rate": (None, "float"),
    "audit.max_spurious_per_100": (None, "float"),
    "audit.min_detection": (None, "float"),
    "audit.min_coverage": (None, "float"),
    "repair.policy": ("heuristic", "str"),
    "repair.max_ops": (2, "int"),
    "repair.max_attempts": (2, "int"),
    "repair.seed": (13, "int"),
}


#: The largest bootstrap a run may ask for (the same bound as `audit --bootstrap`).
MAX_BOOTSTRAP = 1_000_000

#: Dotted key -> (least, greatest) for numbers (None: unbounded), the same rules as the options': a
#: config file cannot ask for what the command line would refuse.
BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "mine.folds": (1, 255),
    "audit.folds": (1, 255),
    "mine.max_domain": (1, None),
    "mine.part_rows": (1, None),
    "mine.max_violation_rate": (1e-12, 1 - 1e-12),
    "audit.bootstrap": (0, MAX_BOOTSTRAP),
    "audit.max_fire_rate": (0, 1),
    "audit.min_detection": (0, 1),
    "audit.min_coverage": (0, 1),
    "audit.max_spurious_per_100": (0, None),
    "repair.max_ops": (1, None),
    "repair.max_attempts": (1, None),
}
#: Dotted key -> the values a string setting may take.
CHOICES: dict[str, tuple[str, ...]] = {
    "mine.clean": ("ok", "reward"),
    "mine.source": ("all", "mined", "schema"),
    "check.encoder": ("v1", "v2", "v2-no-recovery", "generic"),
    "repair.policy": ("precomputed", "heuristic", "command"),
}


@dataclass(frozen=True)
class Setting:
    """A config value and where it came from (`default` or a config file's path; a command's settings
    add `command line` on top, `output_contracts.settings`)."""

    value: Any
    origin: str


@dataclass(frozen=True)
class Config:
    """The config file's settings over the built-in defaults. `file` is the config file used, if any."""

    file: Path | None
    settings: dict[str, Setting] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        """The config (or default) value of `key`. Commands never merge options with it field by
        field: `output_contracts.settings.resolve` does, once per command."""
        return self.settings[key].value

    def path(self, key: str) -> Path | None:
        """Like `get`, for a path setting."""
        v = self.get(key)
        return None if v is None else Path(v)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """`{key: {"value": v, "origin": o}}`, sorted by key, JSON-ready."""
        out: dict[str, dict[str, Any]] = {}
        for k in sorted(self.settings):
            s = self.settings[k]
            v = [str(x) for x in s.value] if isinstance(s.value, list) else s.value
            out[k] = {"value": str(v) if isinstance(v, Path) else v, "origin": s.origin}
        return out


def find_config_file(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The nearest `contracts.toml`, or `pyproject.toml` with `[tool.contracts]`, from `start` upwards."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in CONFIG_NAMES:
            f = folder / name
            if not f.is_file():
                continue
            try:
                data = tomllib.loads(f.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                raise ConfigError(f"cannot parse: {e}", source=str(f)) from e
            if name == "pyproject.toml":
                table = data.get("tool", {}).get("contracts")
                if table is None:
                    continue
                return f, table
            return f, data
    return None


def _coerce(key: str, kind: str, value: Any, base: Path, source: str) -> Any:
    def bad(expected: str) -> ConfigError:
        return ConfigError(f"'{key}' must be {expected}, got {value!r}", source=source, field=key)

    if kind == "path":
        if not isinstance(value, str):
            raise bad("a path string")
        return (base / value).resolve() if not Path(value).is_absolute() else Path(value)
    if kind == "paths":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            raise bad("a path or a list of paths")
        return [(base / x).resolve() if not Path(x).is_absolute() else Path(x) for x in items]
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise bad("an integer")
        return _bounded(key, value, bad)
    if kind == "float":
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise bad("a finite number")
        return _bounded(key, float(value), bad)
    if kind == "str":
        if not isinstance(value, str):
            raise bad("a string")
        if key in CHOICES and value not in CHOICES[key]:
            raise bad("one of " + ", ".join(CHOICES[key]))
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if kind == "table":
        if not isinstance(value, dict):
            raise bad("a table")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
            raise bad("a table of integers")
        return dict(sorted(value.items()))
    raise AssertionError(kind)


def _bounded(key: str, value: Any, bad: Any) -> Any:
    """`value` when it lies within the key's `BOUNDS`, else the setting's error."""
    lo, hi = BOUNDS.get(key, (None, None))

    def txt(x: float) -> str:
        return f"{x:,}" if isinstance(x, int) else f"{x:g}"

    if (lo is not None and value < lo) or (hi is not None and value > hi):
        if lo is not None and hi is not None:
            raise bad(f"between {txt(lo)} and {txt(hi)}")
        raise bad(f">= {txt(lo)}" if lo is not None else f"<= {txt(hi)}")  # type: ignore[arg-type]
    return value


def load_config(start: Path | None = None, *, file: Path | None = None) -> Config:
    """Resolve defaults and the nearest config file (or `file` when given explicitly)."""
    settings = {k: Setting(v, "default") for k, (v, _) in DEFAULTS.items()}
    found: tuple[Path, dict[str, Any]] | None
    if file is not None:
        if not file.is_file():
            raise ConfigError("config file not found", source=str(file))
        try:
            raw = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot parse: {e}", source=str(file)) from e
        if file.name == "pyproject.toml":
            raw = raw.get("tool", {}).get("contracts", {})
        found = (file, raw)
    else:
        found = find_config_file(start)
    if found is None:
        return Config(None, settings)
    path, data = found
    base = path.parent
    for section, table in data.items():
        if not isinstance(table, dict):
            raise ConfigError(f"top-level key '{section}' must be a table", source=str(path), field=section)
        for key, value in table.items():
            dotted = f"{section}.{key}"
            if dotted not in DEFAULTS:
                known = ", ".join(k for k in DEFAULTS if k.startswith(section + "."))
                raise ConfigError(
                    f"unknown setting '{dotted}'" + (f" (known in [{section}]: {known})" if known else ""),
                    source=str(path),
                    field=dotted,
                )
            settings[dotted] = Setting(
                _coerce(dotted, DEFAULTS[dotted][1], value, base, str(path)), str(path)
            )
    return Config(path, settings)
