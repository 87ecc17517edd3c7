"""UNIQUE's corpus pass held to the plain per-call semantics: it ranks the items of a list only for the
values that repeat within a call and rule (a cheap equality test first); values that compare equal as
JSON (`1` and `1.0`, `0` and `-0.0`) but not as text, strings beside numbers, unjudged values (null,
booleans, 2^53), nested lists: the same violations as the per-call checker.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from output_contracts.codes.contract_set import Rule
from output_contracts.traces.ingest import corpus_from_records
from tests.equivalence import assert_paths_agree, hand_rule, one_checker

T = "lookup"


def rule(code: str, paths: list[str], params: dict[str, Any]) -> Rule:
    return hand_rule(T, code, paths, params)


UNIQUES = (
    rule("UNIQUE", ["/xs/*"], {}),
    rule("UNIQUE", ["/rows/*/id"], {}),
    rule("UNIQUE", ["/rows/*/sub/*"], {}),
)
UNIQUE_SET = one_checker(UNIQUES)
scalars = st.sampled_from([0, -0.0, 0.0, 1, 1.0, "1", "a", "", None, True, 2**53, 2.0**53, -3.5, "x"])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.lists(
        st.fixed_dictionaries(
            {
                "xs": st.lists(scalars, max_size=4),
                "rows": st.lists(
                    st.fixed_dictionaries({"id": scalars, "sub": st.lists(scalars, max_size=3)}), max_size=3
                ),
            }
        ),
        min_size=1,
        max_size=6,
    )
)
def test_unique_pass_equals_plain_semantics(batch: list[Any], tmp_path_factory: Any) -> None:
    recs = [
        {"trace_id": f"t{i}", "task_id": f"k{i}", "tool": T, "arguments": {}, "result": r}
        for i, r in enumerate(batch)
    ]
    assert_paths_agree(UNIQUE_SET, corpus_from_records(recs, tmp_path_factory.mktemp("u") / "c"))
