"""The composite GitHub Action (`action.yml`) and the example workflow (`docs/examples/github-workflow.yml`):
both valid against SchemaStore's schemas, the workflow's inputs are the action's, and the action's shell
steps run here, as a runner would run them (`bash -eo pipefail`, inputs and step outputs substituted,
`GITHUB_OUTPUT` / `GITHUB_STEP_SUMMARY` files), so the commands in it cannot rot."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.loaders import github_yaml
from tests.vendored import errors, sarif_errors

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@pytest.fixture(scope="module")
def action(repo: Path) -> dict[str, Any]:
    return github_yaml(repo / "action.yml")


@pytest.fixture(scope="module")
def workflow(repo: Path) -> dict[str, Any]:
    return github_yaml(repo / "docs" / "examples" / "github-workflow.yml")


def test_action_validates_against_schemastore(action: dict[str, Any]) -> None:
    assert errors("github-action.json", action) == []
    broken = {**action, "runs": {**action["runs"], "using": "docker-compose"}}
    assert errors("github-action.json", broken) != []  # the schema really constrains


def test_workflow_validates_and_uses_the_action(workflow: dict[str, Any], action: dict[str, Any]) -> None:
    assert errors("github-workflow.json", workflow) == []
    assert workflow["permissions"] == {"contents": "read", "security-events": "write"}
    steps = workflow["jobs"]["audit"]["steps"]
    (uses,) = [s for s in steps if s.get("id") == "contracts"]
    assert re.fullmatch(r"[\w-]+/contracts@v\d+\.\d+\.\d+", uses["uses"])  # a pinned release
    inputs = action["inputs"]
    assert set(uses["with"]) <= set(inputs)
    assert {k for k, v in inputs.items() if v.get("required")} <= set(uses["with"])


def test_action_installs_its_own_checkout_and_uploads_sarif(action: dict[str, Any]) -> None:
    steps = action["runs"]["steps"]
    install = next(s for s in steps if s.get("id") == "install")
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert 'pip install --disable-pip-version-check -q "$ACTION_PATH"' in install["run"]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "${{ steps.audit.outputs.sarif }}"
    assert "always()" in upload["if"]


def _evaluate(text: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]], repo: Path) -> str:
    def one(m: re.Match[str]) -> str:
        expr = m.group(1)
        if expr.startswith("inputs."):
            return inputs[expr.removeprefix("inputs.")]
        if expr == "github.action_path":
            return str(repo)
        step, _, name = expr.removeprefix("steps.").partition(".outputs.")
        return outputs.get(step, {}).get(name, "")

    return _EXPR.sub(one, text)


def _condition(expr: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]], failed: bool) -> bool:
    """A step's `if:` as GitHub reads it, for the expressions action.yml uses: status functions, `&&`,
    `||`, `==`/`!=` between `inputs.*`, `steps.*.outputs.*` and string literals. Without a status
    function GitHub adds `success()`: the step runs only while no earlier step failed."""
    body = _EXPR.sub(lambda m: m.group(1), expr).strip()
    if not any(f in body for f in ("always()", "success()", "failure()", "cancelled()")):
        body = f"success() && ({body})"

    def value(m: re.Match[str]) -> str:
        ref = m.group(0)
        if ref.startswith("inputs."):
            return repr(inputs[ref.removeprefix("inputs.")])
        step, _, name = ref.removeprefix("steps.").partition(".outputs.")
        return repr(outputs.get(step, {}).get(name, ""))

    py = re.sub(r"\b(inputs\.[\w-]+|steps\.[\w-]+\.outputs\.[\w-]+)", value, body)
    py = py.replace("&&", " and ").replace("||", " or ")
    py = py.replace("always()", "True").replace("cancelled()", "False")
    py = py.replace("success()", str(not failed)).replace("failure()", str(failed))
    return bool(eval(py, {"__builtins__": {}}))  # built above from action.yml's own text


def _upload_sarif(
    step: dict[str, Any], inputs: dict[str, str], outputs: dict[str, dict[str, str]], work: Path
) -> int:
    """What github/codeql-action/upload-sarif does with its `sarif_file`: fail when the path does not exist
    (the failure a run would show), else accept a file that is valid SARIF."""
    path = _evaluate(str(step["with"]["sarif_file"]), inputs, outputs, work)
    if not path or not (work / path).is_file():
        return 1
    return 0 if sarif_errors(orjson.loads((work / path).read_bytes())) == [] else 1


def _run_action(
    action: dict[str, Any], with_: dict[str, str], work: Path, repo: Path
) -> tuple[dict[str, dict[str, str]], dict[str, int | None]]:
    """Run the action's steps in `work` as a runner would, `if:` conditions included: the `run:` steps
    (not `install`: the venv is the install) in bash, the SARIF upload by `_upload_sarif`, setup-python
    not at all. Returns the step outputs and each step's exit code by id (or `uses`), None when skipped."""
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()} | with_
    outputs: dict[str, dict[str, str]] = {}
    codes: dict[str, int | None] = {}
    failed = False
    bindir = str(Path(sys.executable).parent)
    for i, step in enumerate(action["runs"]["steps"]):
        name = str(step.get("id") or step.get("uses"))
        if step.get("id") == "install" or str(step.get("uses", "")).startswith("actions/setup-python@"):
            continue
        if not _condition(str(step.get("if", "success()")), inputs, outputs, failed):
            codes[name] = None
            continue
        if "uses" in step:
            assert str(step["uses"]).startswith("github/codeql-action/upload-sarif@"), step["uses"]
            codes[name] = code = _upload_sarif(step, inputs, outputs, work)
            failed = failed or code != 0
            continue
        assert step["shell"] == "bash"
        env = {k: _evaluate(str(v), inputs, outputs, repo) for k, v in step.get("env", {}).items()}
        out_file = work / f".output-{i}"
        out_file.write_text("")
        script = work / f".step-{i}.sh"
        script.write_text(_evaluate(step["run"], inputs, outputs, repo))
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=work,
            env={
                **os.environ,
                **env,
                "PATH": bindir + os.pathsep + os.environ["PATH"],
                "GITHUB_OUTPUT": str(out_file),
                "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
            },
            capture_output=True,
            text=True,
            timeout=600,
        )
        codes[name] = proc.returncode
        if step.get("id"):
            outputs[step["id"]] = dict(
                line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line
            )
        if proc.returncode != 0:
            (work / f".{name}.stderr").write_text(proc.stdout + proc.stderr)
            failed = True
    return outputs, codes


def test_an_input_error_fails_the_job_once_and_uploads_nothing(
    action: dict[str, Any], repo: Path, tmp_path: Path
) -> None:
    """A mistyped trace path: the audit step fails with exit 2 and its one-line error; no SARIF path is
    given, so the upload (which runs under `always()`) is skipped instead of failing a second time on a
    missing file; the gate step does not run."""
    outputs, codes = _run_action(action, {"traces": "no-such-traces", "upload-sarif": "true"}, tmp_path, repo)
    upload = next(str(s["uses"]) for s in action["runs"]["steps"] if "upload-sarif" in str(s.get("uses", "")))
    assert codes == {"contracts": 0, "audit": 2, upload: None, "gate": None}
    assert outputs["audit"] == {"exit-code": "2"}
    err = (tmp_path / ".audit.stderr").read_text()
    assert "no-such-traces" in err and len([ln for ln in err.splitlines() if "error" in ln]) == 1, err


def test_upload_step_fails_on_a_missing_sarif_file(action: dict[str, Any], tmp_path: Path) -> None:
    """The simulated upload really checks its file (else the test above could not fail)."""
    step = next(s for s in action["runs"]["steps"] if "upload-sarif" in str(s.get("uses", "")))
    assert _upload_sarif(step, {}, {"audit": {"sarif": "missing.sarif"}}, tmp_path) == 1
    assert _condition(str(step["if"]), {"upload-sarif": "true"}, {"audit": {"sarif": "x"}}, failed=True)
    assert not _condition(str(step["if"]), {"upload-sarif": "true"}, {"audit": {}}, failed=True)
    assert not _condition("success()", {}, {}, failed=True)


@pytest.mark.slow
def test_action_steps_run_on_the_sample_world(
    action: dict[str, Any], workflow: dict[str, Any], repo: Path, tmp_path: Path
) -> None:
    """The workflow's inputs, on a 5,000-line slice of the sample world with k = 2 and no bootstrap (the
    full run is measured in docs/ci.md): mine from a reference slice, audit, SARIF, gate."""
    with_ = {
        k: str(v)
        for k, v in next(s for s in workflow["jobs"]["audit"]["steps"] if s.get("id") == "contracts")[
            "with"
        ].items()
    }
    (tmp_path / "traces").mkdir()
    with gzip.open(repo / "sample_traces" / "clean" / "part-1.jsonl.gz", "rt") as fh:
        lines = [next(fh) for _ in range(5000)]
    (tmp_path / "traces" / "part-1.jsonl").write_text("".join(lines))
    shutil.copy(repo / "sample_traces" / "tools.json", tmp_path / "tools.json")
    with_ |= {
        "traces": "traces",
        "registry": "tools.json",
        "mine-from": "traces",
        "folds": "2",
        "bootstrap": "0",
        "max-spurious-per-100": "",  # too few episodes in a slice for this gate to mean anything
    }
    outputs, codes = _run_action(action, with_, tmp_path, repo)
    assert codes["contracts"] == 0, (tmp_path / ".contracts.stderr").read_text()
    assert outputs["contracts"]["path"] == "contracts-audit/contracts.json"
    audit = outputs["audit"]
    assert audit["exit-code"] in {"0", "1"}
    assert codes["audit"] == 0  # exit 1 (a gate failed) does not stop the step: the SARIF is uploaded first
    upload = next(str(s["uses"]) for s in action["runs"]["steps"] if "upload-sarif" in str(s.get("uses", "")))
    assert codes[upload] == 0  # the upload ran and found valid SARIF
    assert codes["gate"] == (0 if audit["exit-code"] == "0" else 1)  # the gate step follows the audit
    log = orjson.loads((tmp_path / audit["sarif"]).read_bytes())
    assert sarif_errors(log) == []
    report = orjson.loads((tmp_path / audit["report"]).read_bytes())
    gates = {g["metric"]: g["passed"] for g in report["gates"]}
    assert set(gates) == {"fire_rate", "detection", "coverage"}
    assert (audit["exit-code"] == "0") == all(gates.values())
    assert (tmp_path / "contracts-audit" / "audit.junit.xml").is_file()
    assert "Contract audit" in (tmp_path / "summary.md").read_text()  # the step summary got the report
