"""What the tests of two codes checked on one world share (RANGE and UNIQUE, FORMAT and LENGTH): the
world's cases list the violations of both codes, and each code's tests assert that code's part of what
the checker finds in them (per call, in the corpus pass's receipts, through the CLI). Together the two
assert what one test of both did."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl
from typer.testing import CliRunner

from output_contracts.checks.checker import check_call, load_contracts, receipts_from_frame
from output_contracts.checks.receipts import encode
from output_contracts.cli.app import app
from output_contracts.codes.contract_set import ContractSet
from output_contracts.codes.violation import Violation
from output_contracts.schemas import schema_errors
from output_contracts.traces.corpus import Corpus

#: A case: (..., the expected violations as tuples whose first member is the code).
Case = tuple[Any, ...]


def ours(vs: Sequence[Violation], code: str) -> list[tuple[str, str, Any, Any]]:
    """`code`'s violations as sorted (code, path, expected, observed)."""
    return sorted((v.code, v.path, v.expected, v.observed) for v in vs if v.code == code)


def of_code(expected: list[tuple[Any, ...]], code: str) -> list[tuple[Any, ...]]:
    """The listed violations of `code`, sorted."""
    return sorted(e for e in expected if e[0] == code)


def write_jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    return path


def receipts_of(stdout: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stdout.splitlines() if line.strip()]


def witnesses(receipt: dict[str, Any], code: str) -> list[tuple[str, str, Any, Any]]:
    """`code`'s violations in an encoded receipt, as sorted (code, path, expected, observed)."""
    return sorted(
        (v["code"], v["path"], v["expected"], v["observed"])
        for v in receipt["outcome_contract"]["violations"]
        if v["code"] == code
    )


def assert_mined_rules(
    cs: ContractSet, cs_file: Path, mined: dict[tuple[str, tuple[str, ...]], Any], code: str
) -> None:
    """The world's contract set is valid, saved and loaded unchanged, and `code`'s rules are those of
    `mined` ((code, paths) -> params)."""
    assert schema_errors(cs.to_json(), "contract-set") == []
    assert schema_errors(orjson.loads(cs_file.read_bytes()), "contract-set") == []
    got = {(r.code, r.paths): r.params for r in cs.rules_for(None) if r.code == code}
    assert got == {k: v for k, v in mined.items() if k[0] == code}
    assert load_contracts(cs_file).to_json() == cs.to_json()


def assert_witnesses(
    cs: ContractSet, tool: str, result: dict[str, Any], expected: list[Any], code: str
) -> None:
    """`check_call` on one case: `code`'s violations are the listed ones; the receipt is valid."""
    rc = check_call(cs, tool, {"order_id": result["order_id"]}, result)
    assert ours(rc.violations if rc is not None else (), code) == of_code(expected, code)
    if rc is not None:
        assert all(v.present for v in rc.violations)
        assert schema_errors(encode(rc), "receipt-v2") == []
        assert schema_errors(encode(rc, "v1"), "receipt-v1") == []
        assert rc.tool == tool and rc.result == result  # the result is never changed


def assert_case_receipts(
    cs: ContractSet, corpus: Corpus, df: pl.DataFrame, cases: Sequence[Case], code: str
) -> None:
    """`corpus` holds `cases` one call a line: the receipts of `check_corpus`'s frame `df`, one a call,
    hold `code`'s listed violations and are valid."""
    receipts = list(receipts_from_frame(cs, corpus, df, include_all=True))
    assert [ours(r.violations, code) for r in receipts] == [of_code(c[-1], code) for c in cases]
    for r in receipts:
        assert schema_errors(encode(r), "receipt-v2") == []


def assert_hand_written(
    hand: ContractSet, corpus: Corpus, df: pl.DataFrame, cases: Sequence[Case], code: str
) -> None:
    """`corpus` holds `cases` one call a line, `df` is its checked frame: each call's violations of
    `code` are the listed ones as (code, path, expected), and the receipts are valid."""
    receipts = {r.line: r for r in receipts_from_frame(hand, corpus, df, include_all=True)}
    assert sorted(receipts) == list(range(1, len(cases) + 1))  # one a call, whether it holds or not
    got = [
        sorted((v.code, v.path, v.expected) for v in receipts[i + 1].violations if v.code == code)
        for i in range(len(cases))
    ]
    assert got == [of_code(c[-1], code) for c in cases]
    for r in receipts.values():
        assert schema_errors(encode(r), "receipt-v2") == []


def assert_cli_check(
    cs_file: Path, src: Path, clean: Path, cases: Sequence[Case], code: str, args: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """`contracts check ARGS` of `src` (the cases, one a line) from the file and from stdin: receipts for
    the lines with violations, `code`'s the listed ones, both ways alike; the `clean` file exits 0.
    Returns the file's receipts."""
    runner = CliRunner()
    res = runner.invoke(app, ["check", "--contracts", str(cs_file), "-q", *args, str(src)])
    assert res.exit_code == 1, res.output
    out = receipts_of(res.stdout)
    assert sorted(r["line"] for r in out) == [i + 1 for i, c in enumerate(cases) if c[-1]]
    want = {i + 1: of_code(c[-1], code) for i, c in enumerate(cases) if of_code(c[-1], code)}
    assert {r["line"]: witnesses(r, code) for r in out if witnesses(r, code)} == want
    for r in out:
        assert schema_errors(r, "receipt-v2") == []
    # stdin is checked call by call (check_call), the file as a corpus (check_corpus): same violations
    streamed = runner.invoke(app, ["check", "-c", str(cs_file), "-q", *args, "-"], input=src.read_bytes())
    assert streamed.exit_code == 1, streamed.output
    assert [(r["line"], r["outcome_contract"]) for r in receipts_of(streamed.stdout)] == [
        (r["line"], r["outcome_contract"]) for r in out
    ]
    # a clean file: exit 0, no receipts
    ok = runner.invoke(app, ["check", "--contracts", str(cs_file), "-q", str(clean)])
    assert ok.exit_code == 0, ok.output
    assert receipts_of(ok.stdout) == []
    return out
