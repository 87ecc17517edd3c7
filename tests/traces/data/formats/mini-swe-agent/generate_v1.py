"""Generate `v1.17.5/demo.traj.json`: mini-swe-agent 1.17.5, unmodified, run offline.

Only the model is replaced, by the package's own `DeterministicModel` (scripted replies); the agent is
its `DefaultAgent` with the `agent` section of its bundled `default.yaml`, the environment its
`LocalEnvironment` in a scratch folder, and the file is written by its own `save_traj`.

    python3 -m venv .venvs/msa1 && .venvs/msa1/bin/pip install mini-swe-agent==1.17.5
    .venvs/msa1/bin/python tests/traces/data/formats/mini-swe-agent/generate_v1.py
"""

import tempfile
from pathlib import Path

import yaml
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import DeterministicModel
from minisweagent.run.utils.save import save_traj

OUT = Path(__file__).parent / "v1.17.5" / "demo.traj.json"
REPLIES = [
    "THOUGHT: Let me see the files.\n\n```bash\nls\n```",
    "THOUGHT: Read the notes file.\n\n```bash\ncat notes.txt\n```",
    "I think the file is elsewhere, but I will not run anything now.",
    "THOUGHT: Two commands at once.\n\n```bash\necho a\n```\n\n```bash\necho b\n```",
    "THOUGHT: Print the config as JSON.\n\n```bash\ncat config.json\n```",
    "THOUGHT: Done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat config.json\n```",
]


def main() -> None:
    config = yaml.safe_load((builtin_config_dir / "default.yaml").read_text())
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "config.json").write_text('{"retries": 3, "verbose": false}\n')
        (Path(work) / "main.py").write_text("print('hi')\n")
        agent = DefaultAgent(
            DeterministicModel(outputs=REPLIES), LocalEnvironment(cwd=work), **config["agent"]
        )
        exit_status, result = agent.run("Find the retry setting")
        save_traj(agent, OUT, exit_status=exit_status, result=result, instance_id="demo-retries")


if __name__ == "__main__":
    main()
