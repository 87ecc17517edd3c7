"""The settings several commands share, and the one call by which a command resolves its own.

Each command module declares its settings dataclass beside its options (`MineSettings` in mine_cmd.py,
...), one field per option plus the config-only settings it reads; `output_contracts.settings` says
how they resolve. A command's Typer function does one thing, `resolved(XSettings, locals())`, and hands
the frozen result to its body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from output_contracts.cli.common import config
from output_contracts.config import MAX_BOOTSTRAP
from output_contracts.errors import UsageError
from output_contracts.settings import Settings, resolve, setting

if TYPE_CHECKING:
    from output_contracts.codes.mine_params import MineParams

S = TypeVar("S", bound=Settings)


def resolved(cls: type[S], options: Mapping[str, Any]) -> S:
    """Settings `cls` from a command's `options` (its `locals()`), the project config and the defaults."""
    return resolve(cls, config(), options)


def parse_min_support(items: list[str]) -> dict[str, int]:
    """`--min-support CLASS=N` items (repeatable) as a table, `{"DOMAIN": 100}`."""
    res: dict[str, int] = {}
    for item in items:
        code, sep, n = item.partition("=")
        if not sep or not n.strip().lstrip("-").isdigit():
            raise UsageError(
                f"--min-support takes CLASS=N (e.g. DOMAIN=100), got {item!r}", field="--min-support"
            )
        res[code.strip().upper()] = int(n)
    return res


def check_bootstrap(n: int) -> None:
    """`--bootstrap` within the bounds `audit.bootstrap` has in a config file."""
    if not 0 <= n <= MAX_BOOTSTRAP:
        raise UsageError(f"--bootstrap must be between 0 and {MAX_BOOTSTRAP:,}, got {n}", field="--bootstrap")


@dataclass(frozen=True, kw_only=True)
class MiningSettings(Settings):
    """The `[mine]` thresholds of a mining run: `mine`, and `audit` and `registry infer`, which mine."""

    min_support: dict[str, int] | None = setting("mine.min_support", from_option=parse_min_support)
    max_domain: int = setting("mine.max_domain")
    clean: str = setting("mine.clean")
    max_violation_rate: float | None = setting("mine.max_violation_rate")

    def mine_params(self, **more: Any) -> MineParams:
        """The library's `MineParams` of these thresholds and `more` (folds, seed, tools, rule source)."""
        from output_contracts.codes.mine_params import MineParams

        return MineParams.of(
            min_support=self.min_support,
            max_domain=self.max_domain,
            clean=self.clean,
            max_violation_rate=self.max_violation_rate,
            **more,
        )
