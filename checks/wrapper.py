"""`@checked(checker)`: check a plain Python tool function's every result, and hand the receipt on.

    @checked(checker, deliver="text")
    def lookup_inventory(sku: str) -> dict: ...

The tool runs exactly as before; its result is checked against the contracts of the tool (named by the
function, or `tool=`), and the receipt reaches the caller the way it chose:

* `"text"` — the function returns the text a model reads: the result itself when it is a string, else
  `json.dumps(result)`; when a rule breaks, a blank line and the receipt's one-line JSON
  (`{"outcome_contract": {...}}`) follow. For tool-calling loops whose tool output is a string.
* `"field"` — the function returns `{"tool_result": <result>, "outcome_contract": {...} | None}`
  (DESIGN §4), for loops that send structured tool output.
* a callable — the function returns the result itself (the same object) and calls `deliver(receipt)`
  when a rule breaks, for loops that attach the receipt elsewhere (a second content block, a log).

Sync and `async def` functions are both wrapped (an async tool stays async). The arguments checked are
the call's arguments by parameter name (`**kwargs` flattened), as a model sends them.

Never raising because of contracts: a violation is data (the receipt), never an exception. An exception
raised by the tool itself propagates unchanged (and is recorded in a `Session` as a failed call). An
exception inside the checker (a bug, or a result it cannot read) must not break the tool call either: it
is logged as a warning on the `output_contracts.checks.wrapper` logger, with its traceback, and the result
passes through unchecked (as when it holds).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from output_contracts.checks.receipts import Receipt
from output_contracts.errors import CheckError

if TYPE_CHECKING:
    from output_contracts.checks.api import Checker, Deliver, Session

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])
DELIVER_MODES = ("text", "field")


def jsonable(value: Any) -> Any:
    """What the checker reads of a tool's return value: pydantic models and dataclasses as their JSON
    data; anything else as it is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json")
        except TypeError:
            return dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def as_text(result: Any) -> str:
    """The text a model reads for a result: a string as it is, anything else as `json.dumps`."""
    if isinstance(result, str):
        return result
    return json.dumps(jsonable(result), ensure_ascii=False, default=str)


def call_arguments(
    sig: inspect.Signature | None, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The call's arguments by parameter name, as the model sent them (`**kwargs` flattened)."""
    if sig is None:
        return dict(kwargs)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return dict(kwargs)
    out: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            out[name] = value
    return out


def checked(
    checker: Checker | Session, *, deliver: Deliver = "text", tool: str | None = None
) -> Callable[[F], F]:
    """A decorator that checks every result of a tool function; see the module docstring.

    `checker`: a `Checker` (each call judged alone) or a `Session` (one episode: cross-call rules
    judged, recovery tools restricted to its tool set). `tool`: the contract set's name of the tool
    (default: the function's `__name__`)."""
    if not callable(deliver) and deliver not in DELIVER_MODES:
        raise CheckError(
            f"deliver must be 'text', 'field' or a callable, got {deliver!r}", code="E_USAGE", field="deliver"
        )
    session: Any = checker

    def decorate(fn: F) -> F:
        name = tool or getattr(fn, "__name__", "tool")
        try:
            sig: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None

        def after(arguments: dict[str, Any], result: Any) -> Any:
            receipt: Receipt | None = None
            try:
                receipt = session.check(name, arguments, jsonable(result))
            except Exception as e:  # the checker must never break the tool call
                log.warning(
                    "contracts: checking %s failed (%s); the result passes unchecked", name, e, exc_info=True
                )
            return deliver_receipt(result, receipt, deliver, session.encoder)

        def failed(arguments: dict[str, Any]) -> None:
            record = getattr(session, "failed", None)
            if record is None:
                return
            try:
                record(name, arguments)
            except Exception as e:
                log.warning("contracts: recording the failed call of %s failed (%s)", name, e, exc_info=True)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                arguments = call_arguments(sig, args, kwargs)
                try:
                    result = await fn(*args, **kwargs)
                except BaseException:
                    failed(arguments)
                    raise
                return after(arguments, result)

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            arguments = call_arguments(sig, args, kwargs)
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                failed(arguments)
                raise
            return after(arguments, result)

        return run  # type: ignore[return-value]

    return decorate


def deliver_receipt(result: Any, receipt: Receipt | None, deliver: Deliver, encoder: str) -> Any:
    """The wrapped function's return value for `deliver` (module docstring)."""
    if callable(deliver):
        if receipt is not None:
            try:
                deliver(receipt)
            except Exception as e:
                log.warning("contracts: the receipt callback failed (%s)", e, exc_info=True)
        return result
    if deliver == "field":
        return {
            "tool_result": result,
            "outcome_contract": receipt.outcome_contract(encoder) if receipt is not None else None,
        }
    text = as_text(result)
    if receipt is None:
        return text
    return f"{text}\n\n{receipt.to_text(encoder)}"
