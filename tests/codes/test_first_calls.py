"""`output_contracts.codes.mining_frames.first_calls`, computed in slices of the calls: the rows one
group-by over all of them gives."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal


@pytest.mark.parametrize("step", [7, 50, 1_000_000])
def test_first_calls_in_slices(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    """Slicing the calls changes nothing: the same rows, in the same order, as one group-by over all."""
    from output_contracts.codes import mining_frames as data

    rng = __import__("random").Random(step)
    n = 400
    calls = pl.DataFrame(
        {
            "cid": sorted(rng.sample(range(1 << 40), n)),
            "task": [rng.randrange(30) for _ in range(n)],
            "tool": pl.Series([rng.choice("abcd") for _ in range(n)]).cast(pl.Categorical),
            "fold": pl.Series([rng.randrange(3) for _ in range(n)], dtype=pl.Int32),
        },
        schema_overrides={"cid": pl.UInt64},
    )
    want = (
        calls.sort("cid").group_by("tool", "fold", maintain_order=True).head(9).select("cid", "tool", "fold")
    )
    monkeypatch.setattr(data, "FIRST_CALLS_SLICE", step)
    for frame in (calls, calls.sample(fraction=1.0, shuffle=True, seed=step)):  # sorted, and not
        assert_frame_equal(data.first_calls(frame, 9), want)
