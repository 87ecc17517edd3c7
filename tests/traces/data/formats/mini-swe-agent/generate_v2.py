"""Generate `v2.4.6/demo.traj.json` (tool calling) and `v2.4.6/demo-textbased.traj.json` (text actions):
mini-swe-agent 2.4.6, unmodified, run offline.

Only the model is replaced, by the package's own `DeterministicToolcallModel` (scripted OpenAI-style
tool calls, built with its `make_toolcall_output`) and `DeterministicModel` (scripted text replies with
their parsed actions, built with its `make_output`); the agent is its `DefaultAgent` with the `agent`
section of its bundled `mini.yaml` (tool calling) and `default.yaml` (text-based), the environment its `LocalEnvironment` in a scratch folder, and
the file is written by the agent's own `save` (its `output_path`; `cost_limit` 0: the scripted model
costs 1 a call).

    python3 -m venv .venvs/msa2 && .venvs/msa2/bin/pip install mini-swe-agent==2.4.6
    .venvs/msa2/bin/python tests/traces/data/formats/mini-swe-agent/generate_v2.py
"""

import json
import tempfile
from pathlib import Path

import yaml
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import (
    DeterministicModel,
    DeterministicToolcallModel,
    make_output,
    make_toolcall_output,
)

OUT = Path(__file__).parent / "v2.4.6" / "demo.traj.json"
OUT_TEXT = Path(__file__).parent / "v2.4.6" / "demo-textbased.traj.json"


def reply(text: str, *commands: tuple[str, str]) -> dict:
    calls = [
        {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": c})}}
        for cid, c in commands
    ]
    return make_toolcall_output(text, calls, [{"command": c, "tool_call_id": cid} for cid, c in commands])


REPLIES = [
    reply("Let me see the files.", ("call_ls", "ls")),
    reply("Read the notes and the config.", ("call_notes", "cat notes.txt"), ("call_cfg", "cat config.json")),
    reply(None, ("call_py", "python3 main.py")),
    reply("Done.", ("call_submit", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat config.json")),
]

TEXT_REPLIES = [
    make_output("THOUGHT: Let me see the files.\n\n```mswea_bash_command\nls\n```", [{"command": "ls"}]),
    make_output(
        "THOUGHT: Read the notes.\n\n```mswea_bash_command\ncat notes.txt\n```",
        [{"command": "cat notes.txt"}],
    ),
    make_output(
        "THOUGHT: Done.\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat config.json\n```",
        [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat config.json"}],
    ),
]


def main() -> None:
    config = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "config.json").write_text('{"retries": 3, "verbose": false}\n')
        (Path(work) / "main.py").write_text("print('hi')\n")
        agent = DefaultAgent(
            DeterministicToolcallModel(outputs=REPLIES),
            LocalEnvironment(cwd=work),
            **(config["agent"] | {"output_path": OUT, "cost_limit": 0}),
        )
        agent.run("Find the retry setting")
    config = yaml.safe_load((builtin_config_dir / "default.yaml").read_text())
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "config.json").write_text('{"retries": 3, "verbose": false}\n')
        agent = DefaultAgent(
            DeterministicModel(outputs=TEXT_REPLIES),
            LocalEnvironment(cwd=work),
            **(config["agent"] | {"output_path": OUT_TEXT, "cost_limit": 0}),
        )
        agent.run("Find the retry setting")


if __name__ == "__main__":
    main()
