"""Progress reporting as a callback the core calls and the CLI renders (pip-audit's shape)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Receives progress from long-running library functions; the library never prints."""

    def start(self, task: str, total: int | None) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def finish(self) -> None: ...


class NullProgress:
    """The default: report nothing."""

    def start(self, task: str, total: int | None) -> None:
        return None

    def advance(self, n: int = 1) -> None:
        return None

    def finish(self) -> None:
        return None


NULL_PROGRESS = NullProgress()
