"""`contracts config`: print the resolved settings and where each came from."""

from __future__ import annotations

from pathlib import Path

import typer

from output_contracts.cli.common import JsonFlag, PlainFlag, QuietFlag, config, out
from output_contracts.cli.tables import Column, Grid, say, show
from output_contracts.jsonutil import pretty_json


def config_command(json_out: JsonFlag = False, quiet: QuietFlag = False, plain: PlainFlag = False) -> None:
    """Print the resolved project settings (command line > contracts.toml > defaults) and their origin."""
    del quiet  # accepted by every command; config writes nothing to stderr
    cfg = config()
    data = cfg.as_dict()
    if json_out:
        out.file.write(pretty_json({"file": str(cfg.file) if cfg.file else None, "settings": data}).decode())
        return
    if not plain:
        say(out, f"config file: {_rel(str(cfg.file)) if cfg.file else '(none found; built-in defaults)'}")
    table = Grid([Column("setting", "key"), Column("value", "path"), Column("origin", "path")])
    for key, s in data.items():
        value = s["value"]
        if isinstance(value, list):
            value = ", ".join(_rel(v) for v in value)
        elif isinstance(value, str):
            value = _rel(value)
        table.add_row(key, "" if value is None else str(value), _rel(s["origin"]))
    show(out, table, plain=plain)


def _rel(text: str) -> str:
    """Show paths below the working directory relative to it (the JSON output keeps them absolute)."""
    try:
        return str(Path(text).relative_to(Path.cwd())) if text.startswith("/") else text
    except ValueError:
        return text


def register(app: typer.Typer) -> None:
    app.command("config")(config_command)
