"""User-facing errors: one class per package, each with a stable code.

An error means "cannot run" (bad input, bad usage); findings such as violations are data, never
exceptions. The CLI catches `ContractsError` once, prints `error[CODE]: file:line: message` on stderr
and exits 2.
"""

from __future__ import annotations


class ContractsError(Exception):
    """Base of every error the CLI renders as one line and exit code 2."""

    default_code = "E_INPUT"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.source = source
        self.line = line
        self.field = field

    def location(self) -> str:
        """`file:line: ` prefix (empty when the error is not tied to a file)."""
        if self.source is None:
            return ""
        if self.line is None:
            return f"{self.source}: "
        return f"{self.source}:{self.line}: "

    def render(self) -> str:
        """The one line the CLI prints: `error[CODE]: file:line: message (field X)`."""
        field = f" (field '{self.field}')" if self.field and self.field not in self.message else ""
        return f"error[{self.code}]: {self.location()}{self.message}{field}"

    def __str__(self) -> str:
        return self.render()


class UsageError(ContractsError):
    """Bad combination of options or arguments."""

    default_code = "E_USAGE"


class ConfigError(ContractsError):
    """Invalid project configuration (contracts.toml / [tool.contracts])."""

    default_code = "E_CONFIG"


class SchemaError(ContractsError):
    """An artifact (contract set, registry, case file, ...) does not match its JSON Schema."""

    default_code = "E_SCHEMA_INVALID"


class TraceError(ContractsError):
    """Unreadable trace input or corpus."""

    default_code = "E_TRACE"


class MiningError(ContractsError):
    """Mining cannot run (empty clean set, bad thresholds, ...)."""

    default_code = "E_MINE"


class CheckError(ContractsError):
    """Checking cannot run (bad contract set, fold mismatch, ...)."""

    default_code = "E_CHECK"


class RepairError(ContractsError):
    """Repair replay cannot run (bad cases, policy failure, ...)."""

    default_code = "E_REPAIR"


class LedgerError(ContractsError):
    """Ledger cannot be created, opened or appended to (lock held, frozen, ...)."""

    default_code = "E_LEDGER"
