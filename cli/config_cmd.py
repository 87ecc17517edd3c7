"""`contracts config`: print the resolved settings and where each came from."""

from __future__ import annotations

import typer
from rich.table import Table

from contracts.cli.common import JsonFlag, config, out
from contracts.jsonutil import pretty_json


def config_command(json_out: JsonFlag = False) -> None:
    """Print the resolved project settings (command line > contracts.toml > defaults) and their origin."""
    cfg = config()
    data = cfg.as_dict()
    if json_out:
        out.file.write(pretty_json({"file": str(cfg.file) if cfg.file else None, "settings": data}).decode())
        return
    out.print(f"config file: {cfg.file if cfg.file else '(none found; built-in defaults)'}")
    table = Table("setting", "value", "origin")
    for key, s in data.items():
        table.add_row(key, "" if s["value"] is None else str(s["value"]), s["origin"])
    out.print(table)


def register(app: typer.Typer) -> None:
    app.command("config")(config_command)
