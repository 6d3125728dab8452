"""The ``askuser`` command (client/askuser_client), run as the agent runs it: a process of its own,
its home folder the test's, against a real Daphne server (tests/servers.py) or none."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import DaphneServer

COMMAND = Path(sys.executable).with_name("askuser")
DEADLINE = 20


@dataclass
class Askuser:
    """``askuser`` with a home folder of its own (``~/.claude``, ``~/.codex``) and the environment given."""

    home: Path
    env: dict[str, str]

    def start(self, *args: str, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(COMMAND), *args],
            env={**self.env, **env},
            cwd=self.home,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
        process = self.start(*args, **env)
        out, err = process.communicate(stdin, timeout=DEADLINE)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.fixture
def askuser(tmp_path) -> Askuser:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKUSER_", "CLAUDE_", "CODEX_"))}
    # The agent finds the command on its PATH, as after `pip install askuser-client`.
    env.update(HOME=str(home), PATH=f"{COMMAND.parent}{os.pathsep}{env.get('PATH', '')}")
    return Askuser(home, env)


@pytest.fixture(scope="module")
def server(server_env):
    """One Daphne for a module's tests: none of them restarts it."""
    daphne = DaphneServer(server_env).start()
    yield daphne
    daphne.stop()
