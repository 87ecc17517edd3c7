"""Generate the MLflow trace of a CrewAI run: MLflow's own CrewAI autologging (`mlflow.crewai.autolog()`)
on the unmodified crew of ../crewai/generate.py (same agent, task, tools and scripted `BaseLLM`), in both
of CrewAI's tool modes, saved with `Trace.to_json()`, one trace a line, gzipped
(`v3/crewai-autolog.traces.jsonl.gz`).

Versions used: mlflow-skinny 3.18.0 and crewai 1.15.44. Command:

    .venvs/crewai/bin/pip install mlflow-skinny   # into the venv of ../crewai/generate.py
    .venvs/crewai/bin/python tests/traces/data/formats/mlflow/generate_crewai.py

The tracking store is a local file store (`MLFLOW_ALLOW_FILE_STORE=true`: the crew's venv has no sqlite
driver for MLflow); the store only holds the traces until they are exported.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "crewai"))
os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"

import generate as crew_run  # noqa: E402  (../crewai/generate.py: the crew, its tools and the scripted model)
import mlflow  # noqa: E402
from crewai import Agent, Crew, Task  # noqa: E402


def main() -> None:
    store = Path(tempfile.mkdtemp(prefix="mlruns-"))
    os.chdir(store)
    mlflow.set_tracking_uri(f"file://{store}")
    mlflow.set_experiment("crewai")
    mlflow.crewai.autolog()
    ids = []
    for native in (True, False):
        llm = crew_run.ScriptedLLM(model="scripted", native=native)
        agent = Agent(
            role="assistant",
            goal="Answer questions about weather and orders",
            backstory="A helpful assistant with tools.",
            llm=llm,
            tools=[crew_run.get_weather, crew_run.divide, crew_run.lookup_order],
        )
        task = Task(
            description="What is the weather in Paris, and where is order A-1001?",
            expected_output="One sentence.",
            agent=agent,
        )
        Crew(agents=[agent], tasks=[task]).kickoff()
        ids.append(mlflow.get_last_active_trace_id())
    mlflow.flush_trace_async_logging()
    # gzip (mtime 0: the same bytes for the same traces): the text-action trace repeats every tool's
    # schema in each TOOL span's inputs and is 290 KB as JSON
    out = HERE / f"v{mlflow.__version__.split('.')[0]}" / "crewai-autolog.traces.jsonl.gz"
    text = "".join(mlflow.get_trace(i).to_json() + "\n" for i in ids)
    out.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    shutil.rmtree(store)
    print(f"mlflow {mlflow.__version__} -> {out}: {ids}", file=sys.stderr)


if __name__ == "__main__":
    main()
