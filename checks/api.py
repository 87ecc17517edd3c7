"""The stable public API for checking tool calls inside an agent loop (re-exported at the package root).

    from output_contracts import Checker
    checker = Checker.load("contracts.json", registry="tools.json")
    receipt = checker.check("lookup_inventory", {"sku": "SKU-1042"}, result)   # a Receipt, or None
    reply = checker.wrap("lookup_inventory", {"sku": "SKU-1042"}, result)      # DESIGN §4's shape

`Checker` is an immutable value: the contract set, the fold checker to apply, the receipt encoder and
the optional tool registry. It is safe to share between threads and episodes. `Checker.check` judges one
call on its own; the cross-call class (CONSISTENT: "the same entity keeps the same value across the
calls of an episode") needs the episode's earlier calls, so it is judged only inside a `Session`
(`checker.session()`): one per episode, fed every call of that episode in order (failed calls too,
through `Session.failed`, since a failed write may still have changed what it names). A session also
knows the episode's tool set, so that receipts offer only the recovery tools the agent can call.

What is promised (docs/api.md): the names exported at the package root and their documented
parameters, return types and behaviour follow semantic versioning from 1.0 on; the JSON shape of
receipts is versioned separately by the encoder name (`v1`, `v2`) and its JSON Schema.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

import orjson

from output_contracts.checks.checker import load_contracts
from output_contracts.checks.receipts import ENCODERS, Receipt, recovery_tools
from output_contracts.checks.wrapper import checked, deliver_receipt
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.engine.compiled import compiled_violations
from output_contracts.codes.engine.evaluate import episode_memory
from output_contracts.codes.evaluation import EpisodeMemory
from output_contracts.errors import CheckError
from output_contracts.traces.tool_registry import Registry, load_registry

F = TypeVar("F", bound=Callable[..., Any])
#: What a wrapped tool does with a receipt: `"text"`, `"field"`, or a callback (see `output_contracts.checks.wrapper`).
Deliver = str | Callable[[Receipt], object]


def decoded(result: Any) -> Any:
    """The result as the checker reads it: a string holding a JSON object or array is decoded (DESIGN
    §2.2, as ingest does); anything else is itself."""
    if isinstance(result, str | bytes) and result.lstrip()[:1] in ("{", "[", b"{", b"["):
        try:
            return orjson.loads(result)
        except orjson.JSONDecodeError:
            return result
    return result


class _WrapsTools:
    """`wrap_tool`, shared by `Checker` (calls judged alone) and `Session` (within one episode)."""

    @overload
    def wrap_tool(self, fn: F, *, deliver: Deliver = "text", tool: str | None = None) -> F: ...
    @overload
    def wrap_tool(
        self, fn: None = None, *, deliver: Deliver = "text", tool: str | None = None
    ) -> Callable[[F], F]: ...
    def wrap_tool(
        self, fn: F | None = None, *, deliver: Deliver = "text", tool: str | None = None
    ) -> F | Callable[[F], F]:
        """`checked(self, deliver=..., tool=...)` applied to `fn` (a decorator when `fn` is omitted)."""
        # `self` is a Checker or a Session, the two things `checked` takes
        deco: Callable[[F], F] = checked(self, deliver=deliver, tool=tool)  # type: ignore[arg-type]
        return deco if fn is None else deco(fn)


@dataclass(frozen=True)
class Checker(_WrapsTools):
    """A contract set ready to check calls: which fold checker (None = the full one), which receipt
    encoder, and the registry whose substitutes are offered as recovery tools (else the contract set's)."""

    contracts: ContractSet
    fold: int | None = None
    encoder: str = "v2"
    registry: Registry | None = None

    def __post_init__(self) -> None:
        if self.encoder not in ENCODERS:
            raise CheckError(
                f"unknown receipt encoder {self.encoder!r} (known: {', '.join(ENCODERS)})",
                code="E_USAGE",
                field="encoder",
            )
        if self.fold is not None:
            self.contracts.rules_for(self.fold)  # a fold the set does not have: CheckError E_FOLD now

    @classmethod
    def load(
        cls,
        path: str | Path,
        registry: str | Path | Registry | None = None,
        fold: int | None = None,
        encoder: str = "v2",
    ) -> Checker:
        """Read a contract set file (`contracts mine -o`), and optionally a registry (`tools.json`).

        Bad files raise a `ContractsError` naming the file, before any call is checked."""
        return cls.from_contracts(load_contracts(path), registry=registry, fold=fold, encoder=encoder)

    @classmethod
    def from_contracts(
        cls,
        contracts: ContractSet,
        registry: str | Path | Registry | None = None,
        fold: int | None = None,
        encoder: str = "v2",
    ) -> Checker:
        """A checker over a contract set already in memory (for instance one `output_contracts.mining` returned)."""
        reg = load_registry(registry) if isinstance(registry, str | Path) else registry
        return cls(contracts, fold=fold, encoder=encoder, registry=reg)

    @property
    def tools(self) -> list[str]:
        """The tools the contract set has rules for, sorted (calls of other tools always hold)."""
        return sorted(name for name, tc in self.contracts.tools.items() if tc.rules)

    def recovery_tools(self, tool: str, visible_tools: Sequence[str] | None = None) -> tuple[str, ...]:
        """The tool itself, then its declared substitutes that are visible (all of them when the tool
        set is unknown): from the registry when it declares the tool, else from the contract set."""
        if self.registry is not None and self.registry.get(tool) is not None:
            return tuple(self.registry.recovery_tools(tool, visible_tools))
        return tuple(recovery_tools(self.contracts, tool, visible_tools))

    def check(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        result: Any,
        *,
        visible_tools: Sequence[str] | None = None,
        call_id: str | None = None,
    ) -> Receipt | None:
        """A `Receipt` when the call breaks a rule, else None. Never changes `result`.

        One call on its own: cross-call rules (CONSISTENT) are not judged; use a `session()` for them.
        `visible_tools`: the episode's tool set, to which recovery tools are restricted."""
        return self._check(tool, arguments, result, visible_tools, None, call_id)

    def wrap(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        result: Any,
        *,
        visible_tools: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """`{"tool_result": result, "outcome_contract": {...}}` (DESIGN §4); `outcome_contract` is None
        when the call holds. `tool_result` is `result` itself, unchanged."""
        return wrapped(result, self.check(tool, arguments, result, visible_tools=visible_tools), self.encoder)

    def session(self, visible_tools: Sequence[str] | None = None) -> Session:
        """A new episode: judges cross-call rules too. One per episode; not shared between episodes."""
        return Session(self, visible_tools)

    def _check(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        result: Any,
        visible_tools: Sequence[str] | None,
        memory: EpisodeMemory | None,
        call_id: str | None,
    ) -> Receipt | None:
        args = dict(arguments) if arguments is not None else {}
        doc = decoded(result)
        vs = compiled_violations(
            self.contracts, tool, args, doc, fold=self.fold, memory=memory, call_id=call_id or ""
        )
        if not vs:
            return None
        return Receipt(
            tool=tool,
            result=doc,
            violations=tuple(vs),
            recovery_tools=self.recovery_tools(tool, visible_tools),
            call_id=call_id,
            encoder=self.encoder,
        )


def wrapped(result: Any, receipt: Receipt | None, encoder: str) -> dict[str, Any]:
    """DESIGN §4's pair: the unchanged result and the receipt's `outcome_contract` (None: it holds)."""
    pair: dict[str, Any] = deliver_receipt(result, receipt, "field", encoder)
    return pair


class Session(_WrapsTools):
    """One episode of calls: what cross-call rules compare a call with, and the episode's tool set.

    Feed it every call of the episode in order: `check` for a call that returned, `failed` for one that
    did not. Calls get ids `call-1`, `call-2`, ... unless given one (a CONSISTENT receipt names the
    earlier call it disagrees with by that id). Thread-safe: concurrent calls are judged one at a time.
    """

    def __init__(self, checker: Checker, visible_tools: Sequence[str] | None = None) -> None:
        self.checker = checker
        #: the episode's tool set (None: unknown, every declared substitute is offered); may be updated
        self.visible_tools: tuple[str, ...] | None = None if visible_tools is None else tuple(visible_tools)
        self.calls = 0
        self._memory = episode_memory(checker.contracts, checker.fold)
        self._lock = threading.Lock()

    @property
    def encoder(self) -> str:
        return self.checker.encoder

    def _next_id(self, call_id: str | None) -> str:
        self.calls += 1
        return call_id or f"call-{self.calls}"

    def check(
        self, tool: str, arguments: Mapping[str, Any] | None, result: Any, *, call_id: str | None = None
    ) -> Receipt | None:
        """As `Checker.check`, with the episode's earlier calls (CONSISTENT) and its tool set."""
        with self._lock:
            cid = self._next_id(call_id)
            return self.checker._check(tool, arguments, result, self.visible_tools, self._memory, cid)

    def failed(self, tool: str, arguments: Mapping[str, Any] | None, *, call_id: str | None = None) -> None:
        """Record a call that returned no result (an error): it may have changed the entities it names,
        so later calls are not compared with what was seen of them before."""
        with self._lock:
            cid = self._next_id(call_id)
            self._memory.record(tool, dict(arguments or {}), None, cid, ok=False)

    def wrap(self, tool: str, arguments: Mapping[str, Any] | None, result: Any) -> dict[str, Any]:
        """As `Checker.wrap`, within the episode."""
        return wrapped(result, self.check(tool, arguments, result), self.encoder)
