"""`open_corpus`: what a command does with the sources it is given — a corpus folder as it is, trace files
ingested into a temporary corpus that goes away when the command is done.

One function, so that every command that accepts "a corpus folder or trace files" decides the same way
and says the same thing about a source that is neither.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from output_contracts.errors import ContractsError, UsageError
from output_contracts.progress import NULL_PROGRESS, Progress
from output_contracts.traces.corpus import Corpus


def is_corpus(src: str | Path) -> bool:
    """Whether `src` is a corpus folder (`contracts ingest`'s output), not trace files."""
    return str(src) != "-" and Corpus.is_corpus(src)


@contextmanager
def open_corpus(
    sources: Sequence[str | Path],
    *,
    format: str = "auto",
    registry: Path | None = None,
    strict: bool = False,
    progress: Progress = NULL_PROGRESS,
    prefix: str = "contracts-",
    keep: Path | None = None,
    allow_empty: bool = False,
) -> Iterator[Corpus]:
    """The corpus of `sources`: one corpus folder, opened; or trace files and folders (any supported
    format, `-` for stdin), ingested into a temporary folder removed on exit (into `keep` instead, left
    in place, when given). A mix of a corpus folder and other sources, or a source that does not exist,
    is a UsageError naming it."""
    if not sources:
        raise UsageError("no source given: a corpus folder or trace files", field="SRC")
    corpora = [s for s in sources if is_corpus(s)]
    if corpora:
        if len(sources) > 1:
            raise UsageError(
                "give one corpus folder, or trace files (a corpus folder cannot be ingested again)",
                source=str(corpora[0]),
                field="SRC",
            )
        yield Corpus.open(corpora[0])
        return
    for s in sources:
        if str(s) != "-" and not Path(s).exists():
            raise UsageError("no such trace file or corpus folder", source=str(s), field="SRC")
    from output_contracts.traces.ingest import ingest

    if keep is not None:
        ingest(
            [str(s) for s in sources],
            keep,
            format=format,
            registry=registry,
            strict=strict,
            progress=progress,
            allow_empty=allow_empty,
        )
        with named_as(keep, sources):
            yield Corpus.open(keep)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        out = Path(tmp) / "corpus"
        ingest(
            [str(s) for s in sources],
            out,
            format=format,
            registry=registry,
            strict=strict,
            progress=progress,
            allow_empty=allow_empty,
        )
        with named_as(out, sources):
            yield Corpus.open(out)


@contextmanager
def named_as(corpus: Path, sources: Sequence[str | Path]) -> Iterator[None]:
    """An error that names the corpus made from `sources` (a folder the user never made, such as
    "no clean calls to mine" at a temporary path) names the sources as the user gave them instead."""
    try:
        yield
    except ContractsError as e:
        if e.source is not None and (e.source == str(corpus) or e.source.startswith(f"{corpus}/")):
            e.source, e.line = ", ".join(str(s) for s in sources), None
        raise
