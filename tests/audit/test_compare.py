"""`contracts compare` (output_contracts.audit.compare): pairing, the paired difference and its interval, the
exact McNemar p-value, strata, cost and receipts; on synthetic arms with known effects, on a split of a
real τ-bench run (effect ≈ 0), on the τ²-bench telecom run's costs, and through the CLI."""

from __future__ import annotations

import json
import math
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from output_contracts.audit import stats
from output_contracts.audit.compare import (
    PairBy,
    arm_episodes,
    compare,
    compare_frames,
    stratum_expr,
)
from output_contracts.cli.app import app
from output_contracts.errors import UsageError
from output_contracts.schemas import validate
from output_contracts.traces.sources import open_corpus

AIRLINE = "tau_bench/trajectories/gpt-4o-airline.json"
TELECOM = (
    "tau2_bench/telecom/trajectories/2025-08-10T02-44-06_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json"
)


# ---- independent references -------------------------------------------------------------------------


def binom_two_sided(k: int, n: int) -> float:
    """scipy.stats.binomtest(k, n, 0.5).pvalue by its own definition: the total probability of every
    outcome no more likely than the one observed (exact fractions; scipy is not a dependency)."""
    if n == 0:
        return 1.0
    pmf = [
        Fraction(math.factorial(n), math.factorial(i) * math.factorial(n - i)) / 2**n for i in range(n + 1)
    ]
    return float(min(Fraction(1), sum(p for p in pmf if p <= pmf[k])))


def numpy_cluster_bootstrap(
    task_of_unit: list[str], values: list[float], n_boot: int, seed: int
) -> tuple[float, float]:
    """Percentile interval of the mean of `values` over units, resampling tasks: a plain numpy loop
    over the same draw convention (resample b, draw i -> splitmix64(offset + b n + i) % n over the
    tasks in sorted order)."""
    tasks = sorted(set(task_of_unit))
    n = len(tasks)
    num = np.zeros(n)
    den = np.zeros(n)
    for t, v in zip(task_of_unit, values, strict=True):
        num[tasks.index(t)] += v
        den[tasks.index(t)] += 1
    off = stats.seed_offset(seed)
    ratios = []
    for b in range(n_boot):
        idx = np.array([stats.splitmix64(off + b * n + i) % n for i in range(n)])
        ratios.append(num[idx].sum() / den[idx].sum())
    return float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


# ---- synthetic arms ------------------------------------------------------------------------------------


def arms(
    n_tasks: int, trials: int, p_base: float, p_mon: float, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two arms of independent Bernoulli episodes (a task-level difficulty shared by both arms)."""
    rng = random.Random(seed)
    rows: dict[str, list[dict[str, Any]]] = {"b": [], "m": []}
    for t in range(n_tasks):
        for k in range(trials):
            for arm, p in (("b", p_base), ("m", p_mon)):
                rows[arm].append(
                    {
                        "trace_id": f"{arm}-{t}-{k}",
                        "task_id": f"task-{t:03d}",
                        "trial": k,
                        "reward": float(rng.random() < p),
                        "cost": 0.10 + (0.02 if arm == "m" else 0.0) + rng.random() / 100,
                    }
                )
    return pl.DataFrame(rows["b"]), pl.DataFrame(rows["m"])


def test_known_effect_is_recovered_with_interval_and_exact_p() -> None:
    """64 tasks x 4 trials, baseline 11% and monitor 28% per episode: +17 points, covered."""
    b, m = arms(64, 4, 0.11, 0.28, seed=3)
    r = compare_frames(b, m, bootstrap=400, seed=13)
    o = r.overall
    assert r.params.paired_by == "trial"
    assert (o.units, o.tasks) == (256, 64)
    bb = b.get_column("reward").mean()
    mm = m.get_column("reward").mean()
    assert o.baseline == pytest.approx(bb) and o.monitor == pytest.approx(mm)
    assert o.difference.points == pytest.approx(100 * (mm - bb))  # type: ignore[operator]
    assert o.difference.low < 17 < o.difference.high  # type: ignore[operator]
    assert o.difference.low > 0  # a real effect of this size is not missed at n = 256
    # discordant pairs counted directly, p against the independent binomial
    j = b.join(m, on=["task_id", "trial"], suffix="_m")
    w = j.filter((pl.col("reward_m") == 1) & (pl.col("reward") == 0)).height
    lo = j.filter((pl.col("reward_m") == 0) & (pl.col("reward") == 1)).height
    assert (o.wins, o.losses) == (w, lo)
    assert o.p_value == pytest.approx(binom_two_sided(lo, w + lo), rel=1e-9)
    assert o.p_value < 1e-4
    # the interval against a numpy re-implementation of the cluster bootstrap
    diffs = (j.get_column("reward_m") - j.get_column("reward")).to_list()
    low, high = numpy_cluster_bootstrap(j.get_column("task_id").to_list(), diffs, 400, 13)
    assert o.difference.low == pytest.approx(100 * low, abs=1e-9)
    assert o.difference.high == pytest.approx(100 * high, abs=1e-9)
    # cost: +0.02 per episode by construction
    assert r.cost is not None and r.cost.units == 256
    assert r.cost.difference.value == pytest.approx(0.02, abs=0.003)
    assert r.cost.difference.low < 0.02 < r.cost.difference.high  # type: ignore[operator]


def test_paper_counts_exactly() -> None:
    """The paper's headline: 28/256 -> 72/256 (10.9% -> 28.1%, +17.19 points), W = 50, L = 6."""
    rng = random.Random(11)
    base = [1] * 28 + [0] * 228
    mon = list(base)
    ones = [i for i, v in enumerate(base) if v == 1]
    zeros = [i for i, v in enumerate(base) if v == 0]
    for i in rng.sample(ones, 6):
        mon[i] = 0
    for i in rng.sample(zeros, 50):
        mon[i] = 1
    order = list(range(256))
    rng.shuffle(order)

    def frame(v: list[int]) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "trace_id": [f"e{i}" for i in range(256)],
                "task_id": [f"t{order[i] // 4}" for i in range(256)],
                "trial": [order[i] % 4 for i in range(256)],
                "reward": [float(x) for x in v],
            }
        )

    r = compare_frames(frame(base), frame(mon), bootstrap=300, seed=5)
    o = r.overall
    assert (o.baseline, o.monitor) == (pytest.approx(28 / 256), pytest.approx(72 / 256))
    assert o.difference.points == pytest.approx(100 * 44 / 256)
    assert (o.wins, o.losses) == (50, 6)
    assert o.p_value == pytest.approx(binom_two_sided(6, 56), rel=1e-9)
    assert r.cost is None  # no cost column: not recorded
    assert r.baseline.completion.method == "bootstrap"
    validate(r.to_json(), "compare-report")  # cost and receipts null


def test_identical_arms_give_zero_and_p_one() -> None:
    b, _ = arms(30, 3, 0.4, 0.4, seed=1)
    r = compare_frames(b, b, bootstrap=200, seed=2)
    o = r.overall
    assert o.difference.points == 0.0 and (o.difference.low, o.difference.high) == (0.0, 0.0)
    assert (o.wins, o.losses, o.p_value) == (0, 0, 1.0)
    assert all(s.p_value == 1.0 for s in r.strata)


def test_cancelling_rescues_and_harms_are_still_resampled() -> None:
    """W = L with both large: the point difference is 0 but its interval is not a point (the bootstrap
    used to skip a numerator summing to 0)."""
    rows_b, rows_m = [], []
    for t in range(40):
        rows_b.append({"trace_id": f"b{t}", "task_id": f"t{t:02d}", "trial": 0, "reward": float(t % 2)})
        rows_m.append({"trace_id": f"m{t}", "task_id": f"t{t:02d}", "trial": 0, "reward": float(1 - t % 2)})
    r = compare_frames(pl.DataFrame(rows_b), pl.DataFrame(rows_m), bootstrap=300, seed=4)
    o = r.overall
    assert o.difference.points == 0.0 and (o.wins, o.losses) == (20, 20)
    assert o.difference.low < -10 and o.difference.high > 10  # type: ignore[operator]
    assert o.p_value == 1.0


def test_pairing_by_task_and_unpaired_counts() -> None:
    """Without trials in one arm: paired by task (each arm's episodes averaged); episodes of tasks the
    other arm lacks are counted as unpaired."""
    b, m = arms(20, 4, 0.3, 0.6, seed=8)
    m = m.filter(pl.col("task_id") != "task-000").with_columns(pl.lit(None, dtype=pl.Int64).alias("trial"))
    m = m.filter(
        ~(
            (pl.col("task_id") == "task-001")
            & (pl.col("trial").is_null())
            & pl.col("trace_id").str.ends_with("-3")
        )
    )
    r = compare_frames(b, m, bootstrap=100, seed=1)
    assert r.params.paired_by == "task"
    o = r.overall
    assert (o.units, o.tasks) == (19, 19)
    assert r.baseline.unpaired == 4 and r.baseline.paired == 76
    assert r.monitor.unpaired == 0 and r.monitor.paired == m.height == 75
    per_b = b.filter(pl.col("task_id") != "task-000").group_by("task_id").agg(pl.col("reward").mean())
    per_m = m.group_by("task_id").agg(pl.col("reward").mean())
    j = per_b.join(per_m, on="task_id", suffix="_m")
    assert o.difference.points == pytest.approx(100 * (j["reward_m"] - j["reward"]).mean())
    assert o.wins == j.filter(pl.col("reward_m") > pl.col("reward")).height
    assert o.losses == j.filter(pl.col("reward_m") < pl.col("reward")).height
    # forcing trial pairing is refused when an arm has no trials
    with pytest.raises(UsageError, match="cannot pair by trial"):
        compare_frames(b, m, bootstrap=0, pair_by=PairBy.trial)
    # forcing task pairing on arms that have trials
    b2, m2 = arms(10, 2, 0.5, 0.5, seed=9)
    assert compare_frames(b2, m2, bootstrap=0, pair_by=PairBy.task).overall.units == 10
    # trials recorded but never the same ones: auto pairs the tasks, a forced trial pairing is refused
    m3 = m2.with_columns(pl.col("trial") + 2)
    assert compare_frames(b2, m3, bootstrap=0).params.paired_by == "task"
    with pytest.raises(UsageError, match=r"share no \(task, trial\)"):
        compare_frames(b2, m3, bootstrap=0, pair_by=PairBy.trial)


def test_unscored_and_threshold() -> None:
    b = pl.DataFrame(
        {
            "trace_id": ["a", "b", "c"],
            "task_id": ["1", "2", "3"],
            "trial": [0, 0, 0],
            "reward": [0.5, 1.0, None],
        }
    )
    m = pl.DataFrame(
        {
            "trace_id": ["x", "y", "z"],
            "task_id": ["1", "2", "3"],
            "trial": [0, 0, 0],
            "reward": [0.9, 0.2, 1.0],
        }
    )
    r = compare_frames(b, m, bootstrap=0)
    assert r.baseline.unscored == 1 and r.overall.units == 2
    assert (r.overall.baseline, r.overall.monitor) == (0.5, 0.0)
    r = compare_frames(b, m, bootstrap=0, threshold=0.5)
    assert (r.overall.baseline, r.overall.monitor) == (1.0, 0.5)
    # no bootstrap: completion widened by Wilson, the difference has no interval
    assert r.baseline.completion.method == "wilson" and r.overall.difference.low is None
    validate(r.to_json(), "compare-report")  # no intervals
    with pytest.raises(UsageError, match="share no task"):
        compare_frames(b, m.with_columns(pl.lit("other").alias("task_id")), bootstrap=0)
    with pytest.raises(UsageError, match="no episode with a reward"):
        compare_frames(b, m.with_columns(pl.lit(None, dtype=pl.Float64).alias("reward")), bootstrap=0)
    with pytest.raises(UsageError, match="strictly increasing"):
        compare_frames(b, m, strata=(0.7, 0.2))


def test_strata_boundaries() -> None:
    """<= the first cut goes low, >= the last cut goes high, a middle value between."""
    rates = pl.DataFrame({"r": [0.0, 0.16, 0.17, 0.5, 0.649, 0.65, 1.0]})
    got = rates.select(stratum_expr(pl.col("r"), (0.16, 0.65))).to_series().to_list()
    assert got == [0, 0, 1, 1, 1, 2, 2]
    b, m = arms(40, 4, 0.3, 0.5, seed=21)
    r = compare_frames(b, m, bootstrap=100, seed=3)
    assert [s.label for s in r.strata] == ["<= 16%", "16-65%", ">= 65%"]
    assert sum(s.units for s in r.strata) == r.overall.units
    assert sum(s.wins for s in r.strata) == r.overall.wins
    rate = b.group_by("task_id").agg(pl.col("reward").mean().alias("rate"))
    assert r.strata[0].tasks == rate.filter(pl.col("rate") <= 0.16).height
    assert r.strata[2].tasks == rate.filter(pl.col("rate") >= 0.65).height
    low = b.join(rate.filter(pl.col("rate") <= 0.16), on="task_id", how="semi")
    assert r.strata[0].baseline == 0.0 == low.get_column("reward").sum()
    assert len(compare_frames(b, m, bootstrap=0, strata=()).strata) == 1


# ---- τ-bench-shaped files (what the CLI reads) --------------------------------------------------------


def tau_run(
    task: int, trial: int, reward: float, cost: float, receipt: bool = False, total: float = 12.5
) -> dict[str, Any]:
    result: dict[str, Any] = {"order_id": f"#W{task}", "total": total}
    if receipt:
        result = {"tool_result": result, "outcome_contract": {"encoder": "v2", "binding": False}}
    return {
        "task_id": task,
        "trial": trial,
        "reward": reward,
        "info": {"user_cost": cost},
        "traj": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_order", "arguments": json.dumps({"id": task})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "get_order", "content": json.dumps(result)},
        ],
    }


def write_arm(path: Path, runs: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(runs))
    return path


def test_delivered_receipts_are_counted(tmp_path: Path) -> None:
    base = write_arm(
        tmp_path / "b.json", [tau_run(t, k, float(t % 3 == 0), 0.01) for t in range(6) for k in range(2)]
    )
    mon_runs = [tau_run(t, k, float(t % 2 == 0), 0.02, receipt=(t == 2)) for t in range(6) for k in range(2)]
    mon = write_arm(tmp_path / "m.json", mon_runs)
    with open_corpus([base]) as b, open_corpus([mon]) as m:
        eps = arm_episodes(m)
        assert eps.get_column("trial").to_list() == [0, 1] * 6
        assert eps.get_column("cost").to_list() == [0.02] * 12
        r = compare(b, m, bootstrap=50, seed=1)
    assert r.receipts is not None
    assert r.receipts.source == "delivered"
    assert (r.receipts.calls, r.receipts.calls_with_receipt) == (12, 2)
    assert (r.receipts.episodes, r.receipts.episodes_with_receipt, r.receipts.paired_units_with_receipt) == (
        12,
        2,
        2,
    )
    assert r.cost is not None and r.cost.parts == ("user",)
    assert r.cost.difference.value == pytest.approx(0.01)
    assert r.cost.relative == pytest.approx(1.0)


def test_checked_receipts_with_contracts(tmp_path: Path) -> None:
    """--contracts: the monitor arm's calls are checked; the counts agree with `contracts check`."""
    runs_b = [tau_run(t, 0, float(t % 4 == 0), 0.01, total=t + 1.5) for t in range(60)]
    # the monitor arm's results break the baseline's positive totals in every fifth task
    runs_m = [
        tau_run(t, 0, float(t % 3 == 0), 0.01, total=-2.0 if t % 5 == 0 else t + 2.5) for t in range(60)
    ]
    base = write_arm(tmp_path / "b.json", runs_b)
    mon = write_arm(tmp_path / "m.json", runs_m)
    runner = CliRunner()
    k = tmp_path / "k.json"
    r = runner.invoke(app, ["mine", str(base), "-o", str(k), "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["compare", str(base), str(mon), "--contracts", str(k), "--json", "-q"])
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)["receipts"]
    r = runner.invoke(app, ["check", "--contracts", str(k), str(mon), "-o", str(tmp_path / "r.jsonl"), "-q"])
    assert r.exit_code == 1  # findings
    receipts = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(receipts) == 12  # one a violating call: tasks 0, 5, ..., 55
    assert rec == {
        "source": "checked",
        "calls": 60,
        "calls_with_receipt": len(receipts),
        "episodes": 60,
        "episodes_with_receipt": 12,
        "paired_units_with_receipt": 12,
    }


# ---- real data -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def airline_split(
    shared_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, list[Any]]:
    """The gpt-4o airline run split into pseudo-arms: trials 0, 1 vs 2, 3 (re-labelled 0, 1)."""
    runs = json.loads((shared_data / AIRLINE).read_text())
    d = tmp_path_factory.mktemp("split")
    a = write_arm(d / "trials-01.json", [r for r in runs if r["trial"] < 2])
    b = write_arm(d / "trials-23.json", [dict(r, trial=r["trial"] - 2) for r in runs if r["trial"] >= 2])
    return a, b, runs


def test_split_of_one_real_run_shows_no_effect(airline_split: tuple[Path, Path, list[Any]]) -> None:
    a, b, runs = airline_split
    with open_corpus([a]) as ca, open_corpus([b]) as cb:
        r = compare(ca, cb, bootstrap=1000, seed=13)
    o = r.overall
    assert r.params.paired_by == "trial"
    assert (o.units, o.tasks) == (100, 50)
    rew = {(x["task_id"], x["trial"]): x["reward"] for x in runs}
    base = [rew[(t, k)] for t in range(50) for k in (0, 1)]
    mon = [rew[(t, k + 2)] for t in range(50) for k in (0, 1)]
    assert o.baseline == pytest.approx(sum(base) / 100) and o.monitor == pytest.approx(sum(mon) / 100)
    w = sum(1 for x, y in zip(base, mon, strict=True) if y == 1 and x == 0)
    lo = sum(1 for x, y in zip(base, mon, strict=True) if y == 0 and x == 1)
    assert (o.wins, o.losses) == (w, lo) == (13, 15)
    assert o.p_value == pytest.approx(binom_two_sided(lo, w + lo), rel=1e-9)
    assert o.p_value > 0.5
    assert o.difference.low < 0 < o.difference.high  # type: ignore[operator]
    assert abs(o.difference.points) < 5  # type: ignore[arg-type]
    # the user simulator's cost per episode (τ-bench's info.user_cost), averaged over pairs with it
    assert r.cost is not None and r.cost.parts == ("user",)
    costs = {(x["task_id"], x["trial"]): x["info"].get("user_cost") for x in runs}
    both = [
        (costs[(t, k)], costs[(t, k + 2)])
        for t in range(50)
        for k in (0, 1)
        if costs[(t, k)] is not None and costs[(t, k + 2)] is not None
    ]
    assert r.cost.units == len(both)
    assert r.cost.baseline == pytest.approx(sum(x for x, _ in both) / len(both))
    assert r.cost.difference.low < 0 < r.cost.difference.high  # type: ignore[operator]


def test_telecom_costs_agent_plus_user(shared_data: Path) -> None:
    """τ²-bench: agent_cost + user_cost per simulation; a run against itself differs by nothing."""
    src = shared_data / TELECOM
    sims = json.loads(src.read_text())["simulations"]
    with open_corpus([src]) as c:
        r = compare(c, c, bootstrap=200, seed=1)
    assert r.params.paired_by == "trial" and r.overall.units == 20
    assert r.overall.baseline == pytest.approx(sum(s["reward_info"]["reward"] for s in sims) / 20) == 0.7
    assert r.overall.p_value == 1.0 and r.overall.difference.points == 0.0
    assert r.cost is not None and r.cost.parts == ("agent", "user")
    want = sum(s["agent_cost"] + s["user_cost"] for s in sims) / 20
    assert r.cost.baseline == pytest.approx(want) and r.cost.difference.value == 0.0


# ---- CLI -------------------------------------------------------------------------------------------------


def test_cli_text_json_markdown_and_gates(
    airline_split: tuple[Path, Path, list[Any]], tmp_path: Path
) -> None:
    a, b, _ = airline_split
    runner = CliRunner()
    r = runner.invoke(
        app,
        ["compare", str(a), str(b), "--bootstrap", "300", "--markdown", str(tmp_path / "c.md")],
        env={"COLUMNS": "80"},
    )
    assert r.exit_code == 0, r.output
    assert max(len(ln) for ln in r.stdout.splitlines()) <= 80  # a reader 80 columns wide
    assert re.search(r"^all +100 +43\.0% +41\.0% ", r.stdout, re.M), r.stdout
    assert "13/15" in r.stdout and "p = 0.851" in r.stderr
    md = (tmp_path / "c.md").read_text()
    assert "| all | 100 | 50 | 43.00% | 41.00% |" in md
    r1 = runner.invoke(app, ["compare", str(a), str(b), "--bootstrap", "300", "--json", "-q"])
    r2 = runner.invoke(app, ["compare", str(a), str(b), "--bootstrap", "300", "--json", "-q"])
    assert r1.exit_code == 0 and r1.stdout == r2.stdout  # deterministic bytes
    data = json.loads(r1.stdout)
    validate(data, "compare-report")
    assert data["overall"]["difference"]["points"] == -2.0
    # gates: a required gain fails (exit 1), a lenient one passes; a p-value gate
    r = runner.invoke(app, ["compare", str(a), str(b), "--bootstrap", "0", "--min-gain", "0"])
    assert r.exit_code == 1 and "gate failed: difference_points -2 is below --min-gain 0" in r.stderr
    r = runner.invoke(
        app, ["compare", str(a), str(b), "--bootstrap", "0", "--min-gain", "-5", "--max-p", "0.9"]
    )
    assert r.exit_code == 0, r.output
    assert "PASS difference_points -2 within --min-gain -5" in r.stdout
    r = runner.invoke(app, ["compare", str(a), str(b), "--bootstrap", "0", "--max-p", "0.05", "--json"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["gates"] == [
        {"metric": "p_value", "op": ">", "threshold": 0.05, "value": 0.850554019213, "passed": False}
    ]


def test_cli_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    good = write_arm(tmp_path / "g.json", [tau_run(t, 0, 1.0, 0.01) for t in range(3)])
    other = write_arm(tmp_path / "o.json", [tau_run(t + 10, 0, 1.0, 0.01) for t in range(3)])
    cases = [
        ([str(tmp_path / "missing.json"), str(good)], "missing.json"),
        ([str(good), str(other)], "share no task"),
        ([str(good), str(good), "--strata", "0.7,0.2"], "--strata"),
        ([str(good), str(good), "--strata", "low"], "--strata"),
        ([str(good), str(good), "--max-p", "2"], "--max-p"),
        ([str(good), str(good), "--pair-by", "trial", "--threshold", "-1"], "--threshold"),
    ]
    for argv, needle in cases:
        r = runner.invoke(app, ["compare", *argv])
        assert r.exit_code == 2, (argv, r.output)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error[") and needle in lines[0], (argv, r.stderr)


@settings(max_examples=40, deadline=None)
@given(
    cells=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 2), st.booleans(), st.booleans()),
        min_size=1,
        max_size=40,
        unique_by=lambda c: (c[0], c[1]),
    )
)
def test_invariants_of_random_arms(cells: list[tuple[int, int, bool, bool]]) -> None:
    """On any pair of arms: W - L and the difference agree, swapping arms negates the difference and
    swaps W and L with the same p, strata partition the units, and p matches the independent binomial."""

    def frame(side: int) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "trace_id": [f"{side}-{t}-{k}" for t, k, *_ in cells],
                "task_id": [f"t{t}" for t, *_ in cells],
                "trial": [k for _, k, *_ in cells],
                "reward": [float(c[2 + side]) for c in cells],
            }
        )

    b, m = frame(0), frame(1)
    r = compare_frames(b, m, bootstrap=20, seed=1)
    s = compare_frames(m, b, bootstrap=20, seed=1)
    o, so = r.overall, s.overall
    n = len(cells)
    assert o.units == n and o.tasks == len({c[0] for c in cells})
    assert o.difference.points == pytest.approx(100 * (o.wins - o.losses) / n)
    assert (so.wins, so.losses, so.p_value) == (o.losses, o.wins, o.p_value)
    assert so.difference.points == pytest.approx(-o.difference.points)  # type: ignore[operator]
    assert o.p_value == pytest.approx(binom_two_sided(min(o.wins, o.losses), o.wins + o.losses), rel=1e-9)
    assert sum(x.units for x in r.strata) == n and sum(x.wins for x in r.strata) == o.wins
    assert o.difference.low <= o.difference.points <= o.difference.high  # type: ignore[operator]
