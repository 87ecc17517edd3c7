"""The registry of property codes: every code folder under `codes/` registers its specs here
(`@register`, as pandera's builtin checks do), and every list of codes is read from it.

Discovery: the first lookup imports each code folder of the `output_contracts.codes` package (a
subpackage other than `engine`); importing a folder runs its `@register`. Specs are light (no polars), so
listing codes costs a few imports; a code's evaluation (`check.py`) and miner (`mine.py`) load only when
first asked for (`checks`, `miners`). Codes are kept in their specs' `order`.

`describe` states a rule as people read it (`/total = /subtotal + /tax (cent)`, `/status in {paid,
pending}`), through its code's spec.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import TYPE_CHECKING, Any, TypeVar, cast

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.spec import Code, modules_of

if TYPE_CHECKING:
    from output_contracts.codes.evaluation import Check, EpisodeCheck
    from output_contracts.codes.violation import Violation

#: The folders of `codes/` that hold no property code.
NOT_CODES = frozenset(("engine",))

_REGISTERED: dict[str, type[Code]] = {}
C = TypeVar("C", bound=type[Code])


def register(cls: C) -> C:
    """Class decorator of a code's spec (in its folder's `__init__.py`): adds it to the registry."""
    have = _REGISTERED.get(cls.name)
    if have is not None and have is not cls:
        raise ValueError(
            f"property code {cls.name} is registered twice ({have.__module__}, {cls.__module__})"
        )
    _REGISTERED[cls.name] = cls
    return cls


@functools.cache
def specs() -> tuple[type[Code], ...]:
    """Every registered code's spec, in order (importing every code folder once)."""
    import output_contracts.codes as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.ispkg and info.name not in NOT_CODES:
            importlib.import_module(f"{package.__name__}.{info.name}")
    found = sorted(_REGISTERED.values(), key=lambda c: c.order)
    orders = [c.order for c in found]
    if len(set(orders)) != len(orders):
        raise ValueError(f"two property codes share an order: {[(c.name, c.order) for c in found]}")
    return tuple(found)


@functools.cache
def names() -> tuple[str, ...]:
    """Every code's name, in order: `REQUIRED`, `TYPE`, ..."""
    return tuple(c.name for c in specs())


def spec(name: str) -> Code | None:
    """The spec of one code, as an instance (None when no code has that name)."""
    return _instances().get(name)


@functools.cache
def _instances() -> dict[str, Code]:
    return {c.name: c() for c in specs()}


@functools.cache
def checks() -> dict[str, Check]:
    """Every code's evaluation (its folder's `check.CHECKS`), by name, in order."""
    found: dict[str, Any] = {}
    for module in modules_of(specs()):
        for c in importlib.import_module(f"{module}.check").CHECKS:
            found[c.name] = c
    return {n: found[n] for n in names()}


def miners() -> list[Any]:
    """One instance of every code folder's miners (its `mine.MINERS`), in the codes' order: the order the
    miner runs them in."""
    return [
        cls() for module in modules_of(specs()) for cls in importlib.import_module(f"{module}.mine").MINERS
    ]


def miner_constants() -> dict[str, Any]:
    """The constants of each code folder's chance argument (its `mine.CONSTANTS`), by folder name: what a
    contract set records of them in its `params`."""
    out: dict[str, Any] = {}
    for module in modules_of(specs()):
        constants = getattr(importlib.import_module(f"{module}.mine"), "CONSTANTS", None)
        if constants is not None:
            out[module.rpartition(".")[2]] = dict(constants)
    return out


def subsumed_by() -> dict[str, tuple[str, ...]]:
    """Codes whose rule another code's rule at the same place implies (`Code.subsumed_by`)."""
    return {c.name: c.subsumed_by for c in specs() if c.subsumed_by}


def episode_codes() -> frozenset[str]:
    """Codes judged against the earlier calls of an episode (`Code.per_episode`)."""
    return frozenset(c.name for c in specs() if c.per_episode)


@functools.cache
def episode_check() -> EpisodeCheck | None:
    """The evaluation of the code judged against the earlier calls of an episode, or None. At most one
    code is: the engine keeps one memory per episode (what `check -` keeps per trace and a `Session` per
    episode), and it is that code's."""
    found = [c for c in checks().values() if c.per_episode]
    if len(found) > 1:
        raise ValueError(f"at most one code may be judged per episode: {[c.name for c in found]}")
    return cast("EpisodeCheck", found[0]) if found else None


def describe(rule: Rule) -> str:
    """A one-line statement of the rule (paths and params), e.g. `/total = /fare + /taxes + /fees`."""
    c = spec(rule.code)
    if c is not None:
        return c.describe(rule)
    p = tuple(x or "(result)" for x in rule.paths)
    return f"{rule.code} {list(p)} {dict(rule.params)}"


def describe_params(rule: Rule) -> str:
    """What `describe` says after the rule's first path (`= /subtotal + /tax (cent)`, `is int`, ...)."""
    c = spec(rule.code)
    return c.describe_params(rule) if c is not None else describe(rule)


def sentence(v: Violation) -> str:
    """The v1 rendering of a violation: one human sentence naming the place, the expectation and the
    evidence (`NONNEG at /available: expected >= 0, observed -3 (...)`)."""
    from output_contracts.jsonutil import canonical_str

    c = spec(v.code)
    shown = canonical_str(v.observed)
    found = c.found(shown) if c is not None else f"observed {shown}"
    exp = v.expected if isinstance(v.expected, str) else canonical_str(v.expected)
    return f"{v.code} at {v.path or '(whole result)'}: expected {exp}, {found} ({v.detail})."
