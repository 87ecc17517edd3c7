"""The command-line reference, docs/cli.md, rendered from the commands' own `--help`.

A hand-kept reference drifts from the options it describes; this one is the help text itself, rendered
at a fixed width without colour, so one tree always gives the same bytes and a test can fail when
docs/cli.md is stale. Regenerate it with `python -m output_contracts.cli.reference -o docs/cli.md`.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Iterator
from pathlib import Path

from typer._click import Command, Context
from typer.core import TyperGroup
from typer.main import get_command

#: Columns the help is wrapped at: wide enough that option tables rarely wrap, narrow enough to read.
WIDTH = 100
REGENERATE = "python -m output_contracts.cli.reference -o docs/cli.md"


def commands() -> Iterator[tuple[str, Command, Context]]:
    """Every command of the app, groups before their members, in the order `--help` lists them: its
    full name (`contracts ledger verify`), the command and a context fixed at `WIDTH` columns."""
    from output_contracts.cli.app import app

    root = get_command(app)
    # the root's own context settings (its help option names among them), as `contracts` itself runs
    settings = {**root.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    yield from _walk(root, Context(root, info_name="contracts", **settings))


def _walk(cmd: Command, ctx: Context) -> Iterator[tuple[str, Command, Context]]:
    yield ctx.command_path, cmd, ctx
    if isinstance(cmd, TyperGroup):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, Context(sub, info_name=name, parent=ctx))


def anchor(name: str) -> str:
    """The anchor GitHub gives the heading `` `name` `` (what README.md links to)."""
    return name.replace(" ", "-")


def summary(cmd: Command) -> str:
    """The first paragraph of a command's help, on one line (a table cell)."""
    first = inspect.cleandoc(cmd.help or "").split("\n\n")[0]
    return " ".join(first.split()).replace("|", "\\|")


def render() -> str:
    """docs/cli.md: an index of every command, then each command's `--help`."""
    found = list(commands())
    lines = [
        "# Command-line reference",
        "",
        f"Every command's `--help`, rendered at {WIDTH} columns. This page is generated: edit the help",
        f"texts in `cli/`, then run `{REGENERATE}`",
        "(`tests/cli/test_reference.py` fails while it is stale). Exit codes everywhere: 0 ok, 1 findings",
        "(violations, a failed gate, a tampered ledger, plan errors), 2 usage or input error.",
        "",
        "| command | what it does |",
        "|---|---|",
        *(f"| [`{name}`](#{anchor(name)}) | {summary(cmd)} |" for name, cmd, _ in found),
    ]
    for name, cmd, ctx in found:
        text = "\n".join(x.rstrip() for x in cmd.get_help(ctx).split("\n"))
        lines += ["", f"## `{name}`", "", "```text", text, "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """`python -m output_contracts.cli.reference [-o FILE]`: print the page, or write it to FILE."""
    parser = argparse.ArgumentParser(prog="python -m output_contracts.cli.reference", description=__doc__)
    parser.add_argument("-o", "--output", type=Path, help="write the page here instead of stdout")
    args = parser.parse_args(argv)
    text = render()
    if args.output is None:
        print(text, end="")
    else:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
