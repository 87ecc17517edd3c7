"""Settings resolved once: a command's options ⊕ the project config ⊕ the built-in defaults.

Each command has one frozen settings dataclass (`cli/settings.py`); one generic resolver, `resolve`,
builds it before the command body runs, and the body reads nothing else. The precedence is written here
once: command line > config file (`contracts.toml` / `[tool.contracts]`, `output_contracts.config`) >
built-in defaults (`config.DEFAULTS`).

Decision: the table from field to config key is declared on the dataclass itself, as field metadata
(`folds: int = setting("audit.folds")`), and read by the one resolver; there is no hand-written merge
per command. The table sits beside each field's type, a new option is one line, and a test can walk
every settings class. A field declared without `setting` is an option the config does not know: it is
taken as the command line gives it (with its Typer default).

The rules the resolver applies, the ones the commands followed field by field before:
- an option is *given* when it is not None and not an empty list or table (options that have a config
  key default to None);
- a given enum member is stored as its value, the type the config holds (`"reward"`, not `Clean.reward`);
- several keys: the first one set wins (`audit` reads `paths.corpus`, then `paths.traces`);
- `many`: a single path from the config becomes a one-item list (`mine` with no SRC mines the corpus);
- relative paths in a config file were already resolved against the file's folder by `load_config`;
- `required`: nothing on the command line or in the config is a one-line usage error naming the option
  and the config key to set (`missing` gives the whole message instead);
- every config-backed field remembers its origin: `command line`, the config file's path, or `default`
  (`Settings.origin`; `contracts config` prints the config's own).

Checks run in a fixed order when the object is built (`Settings.__post_init__`): `check_given` (options
the config does not hold, the command's usage errors that came first), then the required fields, then
`check` (the resolved values). A config value out of bounds or not among its choices has already failed
in `load_config`, naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, TypeVar

from output_contracts.config import Config
from output_contracts.errors import ConfigError

COMMAND_LINE = "command line"
_SOURCE = "output_contracts.settings"


@dataclass(frozen=True)
class Source:
    """Where a settings field comes from besides the command line (see `setting`)."""

    keys: tuple[str, ...]
    what: str | None = None
    required: bool = False
    missing: str | None = None
    many: bool = False
    from_option: Callable[[Any], Any] | None = None
    from_config: Callable[[Any], Any] | None = None

    def error(self) -> ConfigError:
        """The usage error of a needed setting given nowhere."""
        if self.missing is not None:
            return ConfigError(self.missing, code="E_USAGE")
        section, name = self.keys[0].split(".", 1)
        return ConfigError(
            f"no {self.what} given: pass it on the command line or set '{name}' "
            f"under [{section}] in contracts.toml",
            code="E_USAGE",
        )


def setting(
    *keys: str,
    required: str | None = None,
    what: str | None = None,
    missing: str | None = None,
    many: bool = False,
    from_option: Callable[[Any], Any] | None = None,
    from_config: Callable[[Any], Any] | None = None,
) -> Any:
    """A settings field backed by config `keys` (tried in order).

    `required="corpus folder (-o)"`: the command cannot run without it, and the usage error names it
    (`missing`: the whole message instead); `what=...`: the same message, but only when the command
    asks with `Settings.require`. `from_option` converts a given command-line value (`CLASS=N` items
    to a table), `from_config` a config value (after `many`).
    """
    needed = required is not None or missing is not None
    src = Source(tuple(keys), required or what, needed, missing, many, from_option, from_config)
    return field(metadata={_SOURCE: src})


def source_of(f: Any) -> Source | None:
    """The `Source` a dataclass field was declared with, or None for a plain option."""
    src = f.metadata.get(_SOURCE)
    return src if isinstance(src, Source) else None


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Base of every command's settings: origins, and the checks run when the object is built."""

    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.check_given()
        for f in fields(self):
            src = source_of(f)
            if src is not None and src.required and getattr(self, f.name) is None:
                raise src.error()
        self.check()

    def check_given(self) -> None:
        """Usage errors of the options alone, reported before a missing setting (none by default)."""

    def check(self) -> None:
        """Usage errors of the resolved values (none by default)."""

    def origin(self, name: str) -> str:
        """Where field `name` came from: `command line`, a config file's path, or `default`."""
        return self.origins.get(name, COMMAND_LINE)

    def require(self, name: str) -> Any:
        """Field `name`'s value, or the usage error saying how to give it (for a setting a command
        needs only on some paths, as `repair-cases` needs a registry for a corpus source)."""
        value = getattr(self, name)
        if value is None:
            src = next(source_of(f) for f in fields(self) if f.name == name)
            if src is None or src.what is None:
                raise TypeError(f"{type(self).__name__}.{name} is not a setting a command can require")
            raise src.error()
        return value


S = TypeVar("S", bound=Settings)


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, list | tuple | dict) and not value)


def _from_config(src: Source, config: Config) -> tuple[Any, str]:
    """The first config key set (else the first key's default) and its origin."""
    first = config.settings[src.keys[0]]
    for key in src.keys:
        found = config.settings[key]
        if _given(found.value):
            value = found.value
            if src.many and not isinstance(value, list):
                value = [value]
            return (src.from_config(value) if src.from_config else value), found.origin
    return None, first.origin


def resolve(cls: type[S], config: Config, options: Mapping[str, Any]) -> S:
    """Build settings `cls` from the `options` a command received, `config` and the defaults.

    `options` holds every command-line parameter by name (a command passes its `locals()`): each must
    be a field of `cls`, and each field that has no config key must be among them; a mismatch is a bug
    in the command, raised as `TypeError`.
    """
    declared = [f for f in fields(cls) if f.name != "origins"]
    unknown = sorted(set(options) - {f.name for f in declared})
    if unknown:
        raise TypeError(f"{cls.__name__} has no field for option(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for f in declared:
        src = source_of(f)
        if src is None:
            if f.name not in options:
                raise TypeError(f"{cls.__name__}.{f.name} is neither an option nor a config setting")
            values[f.name] = options[f.name]
            continue
        given = options.get(f.name)
        if _given(given):
            value = given.value if isinstance(given, Enum) else given
            values[f.name] = src.from_option(value) if src.from_option else value
            origins[f.name] = COMMAND_LINE
        else:
            values[f.name], origins[f.name] = _from_config(src, config)
    return cls(origins=origins, **values)
