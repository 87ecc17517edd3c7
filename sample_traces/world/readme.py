"""`sample_traces/README.md`: the template `readme_template.md` filled with the computed figures.

Why a template and generated rows: the prose is edited as Markdown, while every figure (call counts,
the tool table, the invariants, the noise fields, the fault counts) is computed from the very files
written next to it, so the page can never disagree with the data. `string.Template` is used because
the page is full of `{...}` (JSON examples) and has a single literal `$`, written `$$`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from string import Template
from typing import Any

from .faults import FAULT_KINDS, FAULT_RATE
from .planted import Rule
from .registry import registry
from .vocab import LEGACY_BIN_TASK, RARE_CARRIER_TASK

TEMPLATE = Path(__file__).with_name("readme_template.md")
#: The rule classes listed one by one on the page, in this order.
LISTED_CODES = ("RELATION", "DATE_ORDER", "ECHO", "DOMAIN")


def _fmt_rule(r: Rule) -> str:
    """A rule of one of the LISTED_CODES in the page's notation, e.g. `/total` = `/subtotal` + `/tax`."""
    paths, params = r["paths"], r["params"]
    if r["code"] == "RELATION":
        a, xs = paths[0], paths[1:]
        if params["form"] == "linear":
            rhs = " ".join(
                (("+ " if c > 0 else "- ") if i else ("" if c > 0 else "-")) + f"`{x}`"
                for i, (c, x) in enumerate(zip(params["coef"], xs, strict=True))
            )
        elif params["form"] == "product":
            rhs = f"`{xs[0]}` × `{xs[1]}`"
        else:
            rhs = f"Σ `{xs[0]}`"
        return f"`{a}` = {rhs}"
    if r["code"] == "DATE_ORDER":
        return f"`{paths[0]}` ≤ `{paths[1]}`"
    if r["code"] == "ECHO":
        return f"`{paths[0]}` = `{paths[1]}`"
    return f"`{paths[0]}` ∈ {{{', '.join(params['values'])}}}"  # DOMAIN


def _tool_rows(by_tool: dict[str, int]) -> list[str]:
    rows = []
    for spec in registry()["tools"]:
        subs = ", ".join(spec["substitutes"]) or "—"
        imm = ", ".join(f"`{p}`" for p in spec["immutable"]) or "—"
        output = "yes" if "output" in spec else "no (on purpose)"
        rows.append(f"| `{spec['name']}` | {by_tool[spec['name']]:,} | {subs} | {imm} | {output} |")
    return rows


def _noise_row(n: Rule) -> str:
    what = ", ".join(n["codes"]) + (f" (with `{n['with']}`)" if "with" in n else "")
    return f"| `{n['tool']}` | `{n['path']}` | {what} | {n['why']} |"


def _format_row(name: str, fc: dict[str, Any]) -> str:
    ids = fc["trace_ids"]
    return f"| `{name}` | {fc['episodes']} | {fc['calls']} | {fc['error_calls']} | `{ids[0]}` … `{ids[-1]}` |"


def readme(seed: int, counts: dict[str, Any], rules: list[Rule], noise: list[Rule]) -> str:
    """The page for these counts, invariants and noise fields."""
    c, f = counts["clean"], counts["faulty"]
    by_code = Counter(r["code"] for r in rules)
    nonneg = sorted({f"`{r['tool']}` `{r['paths'][0]}`" for r in rules if r["code"] == "NONNEG"})
    note, _, body = TEMPLATE.read_text(encoding="utf-8").partition("\n")
    assert note.startswith("<!-- template:"), f"{TEMPLATE.name} must start with its template note"
    return Template(body).substitute(
        seed=seed,
        clean_calls=f"{c['calls']:,}",
        clean_error_calls=c["error_calls"],
        clean_episodes=f"{c['episodes']:,}",
        clean_tasks=c["tasks"],
        faulty_calls=f"{f['calls']:,}",
        faulty_episodes=f"{f['episodes']:,}",
        faulty_tasks=f["tasks"],
        faulted_calls=f"{f['faulted_calls']:,}",
        all_calls=f"{counts['all_calls']:,}",
        tool_rows="\n".join(_tool_rows(c["by_tool"])),
        n_planted=len(rules),
        planted_by_class=", ".join(f"{code} {by_code[code]}" for code in sorted(by_code)),
        rule_lines="\n".join(
            f"- {code} `{r['tool']}`: {_fmt_rule(r)}"
            for code in LISTED_CODES
            for r in rules
            if r["code"] == code
        ),
        nonneg_only=", ".join(nonneg),
        noise_rows="\n".join(_noise_row(n) for n in noise),
        legacy_bin_task=LEGACY_BIN_TASK,
        rare_carrier_task=RARE_CARRIER_TASK,
        episodes_per_faulty_task=f["episodes"] // f["tasks"],
        fault_percent=round(FAULT_RATE * 100),
        fault_rows="\n".join(
            f"| `{k}` | {f['faults_by_kind'].get(k, 0)} | {what} |" for k, what in FAULT_KINDS.items()
        ),
        format_rows="\n".join(_format_row(name, fc) for name, fc in counts["formats"].items()),
    )
