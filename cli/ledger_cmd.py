"""`contracts ledger …`: verify, inspect, anchor and prove ledgers (library: output_contracts.ledger).

Exit codes: 0 all holds; 1 a finding (the ledger or proof does not verify, naming the first failure);
2 the command cannot run (no such folder, not a ledger, malformed proof file).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from output_contracts.cli.common import (
    JsonFlag,
    QuietFlag,
    err,
    fail,
    findings_exit,
    json_flag,
    out,
    progress_bar,
)
from output_contracts.errors import LedgerError
from output_contracts.jsonutil import canonical_str, loads, pretty_json
from output_contracts.progress import Progress as ProgressProtocol

ledger_app = typer.Typer(
    name="ledger",
    help="Verify, inspect, anchor and prove append-only run ledgers.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

DirArg = Annotated[
    Path, typer.Argument(metavar="DIR", help="The ledger folder (holds ledger.json, ledger.jsonl).")
]


def _write(text: str) -> None:
    out.file.write(text)


def _progress(quiet: bool) -> ProgressProtocol:
    """A bar on an interactive stderr; nothing for pipes, files, CI logs or --quiet."""
    return progress_bar(quiet, unit="bytes")


@ledger_app.command("verify")
def verify_command(
    directory: DirArg,
    require_frozen: Annotated[
        bool, typer.Option("--require-frozen", help="Fail (exit 1) unless the ledger is frozen.")
    ] = False,
    head: Annotated[
        str | None, typer.Option("--head", metavar="HASH", help="Anchor: the head hash recorded elsewhere.")
    ] = None,
    root: Annotated[
        str | None, typer.Option("--root", metavar="HASH", help="Anchor: the Merkle root recorded elsewhere.")
    ] = None,
    json_out: JsonFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Recompute every hash, the chain, the header bindings and the manifest; exit 1 naming the first failure."""
    from output_contracts.ledger import verify

    _anchor(head, "--head")
    _anchor(root, "--root")
    report = verify(directory, require_frozen=require_frozen, head=head, root=root, progress=_progress(quiet))
    if json_out:
        _write(pretty_json(report.to_dict()).decode())
    else:
        for p in report.problems:
            _write(p.render() + "\n")
    if report.ok and not quiet:
        state = "frozen" if report.frozen else "not frozen"
        err.print(
            f"ok: {report.entries} entries, {state}, head {report.head}, root {report.root}", markup=False
        )
    elif not report.ok and not quiet:
        first = report.problems[0]
        more = f" (+{len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
        err.print(f"FAILED: {first.render()}{more}", markup=False, style="red")
    findings_exit(not report.ok)


@ledger_app.command("show")
def show_command(
    directory: DirArg,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", "-k", metavar="KIND", help="Only entries of this kind (repeatable)."),
    ] = None,
    json_out: Annotated[
        bool, json_flag("Print the entries on stdout as JSON Lines (their exact ledger lines).")
    ] = False,
    width: Annotated[
        int,
        typer.Option("--width", min=0, metavar="N", help="Cut text-mode bodies to N characters (0: never)."),
    ] = 200,
    quiet: QuietFlag = False,
) -> None:
    """Print the entries (each checked against its hash and the chain) in order."""
    from output_contracts.ledger import read_entries

    _require_verified(directory)
    kinds = set(kind or ())
    shown = 0
    for e in read_entries(directory):
        if kinds and e.kind not in kinds:
            continue
        shown += 1
        if json_out:
            _write(e.line().decode())
        else:
            text = canonical_str(e.body)
            if width and len(text) > width:
                text = text[: max(width - 1, 0)] + "…"
            _write(f"{e.seq:>6}  {e.hash[:12]}  {e.kind}  {text}\n")
    if not quiet:
        err.print(f"{shown} entr{'y' if shown == 1 else 'ies'} shown", markup=False)


def _require_verified(directory: Path) -> None:
    """`head`, `show` and `prove` speak for a ledger only when it verifies (a frozen ledger whose
    entries were emptied would otherwise print the genesis head, "0 entries", exit 0): the first
    problem and exit 1 otherwise."""
    from output_contracts.ledger import verify

    report = verify(directory)
    if not report.ok:
        first = report.problems[0]
        more = f" (+{len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
        err.print(f"FAILED: {first.render()}{more}", markup=False, style="red")
        findings_exit(True)


def _anchor(value: str | None, flag: str) -> None:
    """A malformed anchor is a usage error (exit 2), not a finding: a SHA-256 is 64 hex digits."""
    if value is not None and not re.fullmatch(r"[0-9a-f]{64}", value):
        fail(f"{flag} must be a SHA-256 hash (64 lowercase hex digits), got {value!r}", field=flag)


@ledger_app.command("head")
def head_command(directory: DirArg, json_out: JsonFlag = False, quiet: QuietFlag = False) -> None:
    """Print the head hash (the last entry's hash), recomputed from the entries."""
    from output_contracts.ledger.verify import head_info

    del quiet  # accepted by every command; head writes nothing to stderr but a failure
    _require_verified(directory)
    entries, head, root = head_info(directory)
    if json_out:
        _write(pretty_json({"entries": entries, "head": head, "root": root}).decode())
    else:
        _write(head + "\n")


@ledger_app.command("prove")
def prove_command(
    directory: DirArg,
    seq: Annotated[int, typer.Argument(metavar="SEQ", help="The entry to prove (its seq).")],
    quiet: QuietFlag = False,
) -> None:
    """Print the RFC 6962 inclusion proof of entry SEQ as JSON (check it with `verify-proof --root`)."""
    from output_contracts.ledger.proof import prove

    del quiet  # accepted by every command; prove writes nothing to stderr but a failure
    _require_verified(directory)
    _write(pretty_json(prove(directory, seq)).decode())


@ledger_app.command("verify-proof")
def verify_proof_command(
    proof: Annotated[
        Path,
        typer.Argument(metavar="PROOF", help="A proof file from `contracts ledger prove` ('-' for stdin)."),
    ],
    root: Annotated[
        str | None,
        typer.Option(
            "--root", metavar="HASH", help="The trusted Merkle root (an anchor published elsewhere)."
        ),
    ] = None,
    size: Annotated[
        int | None,
        typer.Option("--size", metavar="N", help="The anchored entry count (checked against tree_size)."),
    ] = None,
    json_out: JsonFlag = False,
    quiet: QuietFlag = False,
) -> None:
    """Check that the proof's entry belongs to the ledger whose Merkle root is --root."""
    from output_contracts.ledger.proof import check_proof

    _anchor(root, "--root")
    source = "<stdin>" if str(proof) == "-" else str(proof)
    try:
        data = sys.stdin.buffer.read() if str(proof) == "-" else proof.read_bytes()
    except OSError as e:
        raise LedgerError(f"cannot read proof: {e.strerror}", source=source) from None
    try:
        doc = loads(data)
    except ValueError as e:
        raise LedgerError(f"proof is not JSON: {e}", source=source) from None
    result = check_proof(doc, root, size=size, source=source)
    if json_out:
        _write(pretty_json(result.to_dict()).decode())
    else:
        for p in result.problems:
            _write(p + "\n")
    if root is None and not quiet:
        err.print(
            "warning: no --root given: checked only against the root the proof itself states", markup=False
        )
    if result.ok and not quiet:
        err.print(
            f"ok: entry {doc['seq']} ({doc['entry']['kind']}) is leaf {doc['seq']} of {doc['tree_size']} "
            f"under root {result.computed_root}",
            markup=False,
        )
    elif not result.ok:
        err.print(f"FAILED: {result.problems[0]}", markup=False, style="red")
    findings_exit(not result.ok)


@ledger_app.command("repair")
def repair_command(directory: DirArg, quiet: QuietFlag = False) -> None:
    """Drop a partial last line left by a crash and record what was dropped as a `ledger.repair` entry."""
    from output_contracts.ledger import Ledger
    from output_contracts.ledger.scan import scan_entries

    path = directory / "ledger.jsonl"
    if not directory.is_dir() or not path.is_file():
        raise LedgerError("not a ledger folder (no ledger.jsonl)", source=str(directory))
    scan = scan_entries(path)
    if scan.intact:
        if not quiet:
            err.print("nothing to repair: ledger.jsonl ends with a complete entry", markup=False)
        return
    led = Ledger.open(directory, repair_tail=True)  # refuses anything but a bad tail, or a frozen ledger
    led.close()
    if quiet:
        return
    err.print(
        f"dropped {len(scan.tail)} byte(s) at offset {scan.good_size}; recorded as entry {led.count - 1} "
        f"(ledger.repair); head {led.head}",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    """Add the `ledger` command group to the root app."""
    app.add_typer(ledger_app, name="ledger")


__all__ = ["ledger_app", "register"]
