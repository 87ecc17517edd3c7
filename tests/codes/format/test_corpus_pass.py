"""FORMAT's corpus pass held to the plain per-call semantics: it judges each distinct (rule, string) once and
joins only the breaking pairs back to the leaves; a corpus that repeats its strings across calls, rules and
levels (exact, loose, charset) at one place must give exactly the violations `call_violations` gives call
by call, witnesses byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.codes.contract_set import Rule
from output_contracts.codes.format.shapes import LONG
from output_contracts.traces.ingest import corpus_from_records
from tests.equivalence import assert_paths_agree, hand_rule, one_checker

T = "lookup"


def rule(code: str, paths: list[str], params: dict[str, Any]) -> Rule:
    return hand_rule(T, code, paths, params)


FORMATS = (
    rule("FORMAT", ["/id"], {"level": "exact", "shapes": ["AA-9999", "a-a"]}),
    rule("FORMAT", ["/id"], {"level": "loose", "shapes": ["A-9", "a"]}),
    rule("FORMAT", ["/id"], {"level": "charset", "shapes": ["7:-", "7:9", "7:A", "0:"]}),
    rule("FORMAT", ["/xs/*/b"], {"level": "charset", "shapes": ["6:9", "6:A", LONG]}),
    rule("FORMAT", ["/xs/*/b"], {"level": "loose", "shapes": ["A9", "a"]}),
    rule("FORMAT", ["$args/q"], {"level": "exact", "shapes": ["aaa"]}),
)
FORMAT_SET = one_checker(FORMATS)

# A small pool, so that strings repeat across calls, rules and places (the pass dedupes them), beside
# random text; numbers and nulls are TYPE's business and must not break a FORMAT rule.
POOL = ["AB-1234", "ab-cd", "xyz", "4WQ150", "VAAOXJ", "4wq150", "", "Ab-12", "x" * 65, "A1", "ĀB-1234"]
strings = st.one_of(st.sampled_from(POOL), st.text(max_size=8), st.text(alphabet="Aa9-", max_size=8))
values = st.one_of(strings, strings, st.integers(-2, 2), st.none())


@st.composite
def calls(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    result = {"id": draw(values), "xs": draw(st.lists(st.fixed_dictionaries({"b": values}), max_size=3))}
    return {"q": draw(values)}, result


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(calls(), min_size=1, max_size=10))
def test_format_pass_equals_plain_semantics(batch: list[Any], tmp_path_factory: Any) -> None:
    recs = [
        {"trace_id": f"t{i % 3}", "task_id": f"k{i % 3}", "tool": T, "arguments": a, "result": r}
        for i, (a, r) in enumerate(batch)
    ]
    corpus = corpus_from_records(recs, tmp_path_factory.mktemp("f") / "c")
    assert_paths_agree(FORMAT_SET, corpus)


def test_format_pass_finds_the_repeated_breaks(tmp_path: Path) -> None:
    """The same breaking string in several calls and places is reported at each of them."""
    recs = [
        {
            "trace_id": f"t{i}",
            "task_id": f"k{i}",
            "tool": T,
            "arguments": {"q": "abc" if i else "ab1"},
            "result": {"id": "ab-1", "xs": [{"b": "4WQ150"}, {"b": "4wq150"}]},
        }
        for i in range(3)
    ]
    corpus = corpus_from_records(recs, tmp_path / "c")
    df = assert_paths_agree(FORMAT_SET, corpus)
    got = sorted(df.select("trace_id", "path", "observed").iter_rows())
    want = [(t, "/id", '"ab-1"') for t in ("t0", "t1", "t2") for _ in range(3)]  # at every level
    want += [(t, "/xs/0/b", '"4WQ150"') for t in ("t0", "t1", "t2")]  # loose: 9A9
    want += [(t, "/xs/1/b", '"4wq150"') for t in ("t0", "t1", "t2") for _ in range(2)]  # charset, loose
    want += [("t0", "$args/q", '"ab1"')]
    assert got == sorted(want)
