"""The real coding-agent CLIs (Claude Code, Codex), run offline against askuser and a model fake.

The CLIs are npm's, pinned in ``.ci/agent-clis/package.json`` and installed beside it by
``.ci/run`` (``npm ci --ignore-scripts``). Each test gets a network namespace with nothing
but loopback (``unshare -n``; root), where the CLI runs: no request it makes can leave the
machine. The servers it talks to stay outside, in the test's own namespace, where
PostgreSQL and Redis are: a small process inside the namespace binds the listening sockets
there and hands them over (``SCM_RIGHTS``), and a socket keeps the namespace it was made
in. askuser's Daphne serves one of them beside its ordinary listener, so the CLI's hook
reaches askuser at ``127.0.0.1:<port>`` inside while the test answers at its usual URL.

- ``Namespace``: the loopback-only namespace, its listeners, and ``command()`` to run
  something inside it.
- ``ClaudeCode`` / ``Codex``: a home folder of their own with the hook settings
  (``settings.json``; Codex's ``config.toml`` and ``hooks.json``), and the command line that
  runs them against the model fake.
- ``Terminal``: an interactive CLI in tmux, read with ``capture-pane`` until a text shows.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from askuser_app.models import Prompt
from tests.conftest import log_in
from tests.modelfake import ModelFake
from tests.servers import ROOT, DaphneServer

CLIS = ROOT / ".ci" / "agent-clis" / "node_modules"
CLAUDE = CLIS / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
CODEX = CLIS / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex"
REQUIRED = bool(os.environ.get("ASKUSER_REQUIRE_AGENT_CLIS"))
HOW = (
    "the real Claude Code and Codex CLIs run only with ASKUSER_REQUIRE_AGENT_CLIS=1, as root (unshare -n), "
    "after `npm ci --ignore-scripts --prefix .ci/agent-clis` and with tmux installed; .ci/run's tier 2 does"
)
DEADLINE = 60  # seconds a CLI may take to reach a point a test waits for


def missing() -> str:
    """What keeps the real CLIs from running here; "" when nothing does."""
    if os.geteuid() != 0:
        return "not root: unshare -n needs it"
    absent = [str(p.relative_to(ROOT)) for p in (CLAUDE, CODEX) if not p.exists()]
    absent += [tool for tool in ("unshare", "nsenter", "ip", "tmux") if shutil.which(tool) is None]
    return f"missing: {', '.join(absent)}" if absent else ""


if REQUIRED and (why := missing()):
    raise pytest.UsageError(
        f"ASKUSER_REQUIRE_AGENT_CLIS is set, but the real agent CLIs cannot run here ({why}): {HOW}"
    )


# --- the namespace ----------------------------------------------------------------------

# Run by ``unshare -n``: bring loopback up, bind the listeners asked for, send them over
# the socket whose descriptor it is given, and hold the namespace until that socket closes.
HOLDER = """
import socket, subprocess, sys
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
parent = socket.socket(fileno=int(sys.argv[2]))
listeners = []
for _ in range(int(sys.argv[1])):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    listeners.append(listener)
socket.send_fds(parent, [b"ready"], [s.fileno() for s in listeners])
for listener in listeners:
    listener.close()
parent.recv(1)
"""


class Namespace:
    """A network namespace with loopback only, held open by a small process until ``close()``."""

    def __init__(self, listeners: int) -> None:
        mine, theirs = socket.socketpair()
        self.holder = subprocess.Popen(
            ["unshare", "-n", "--", sys.executable, "-c", HOLDER, str(listeners), str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        self.control = mine
        mine.settimeout(DEADLINE)
        try:
            _, fds, _, _ = socket.recv_fds(mine, 16, listeners)
        except (OSError, TimeoutError) as broken:
            self.close()
            raise RuntimeError(f"the network namespace did not start: {broken}") from broken
        if len(fds) != listeners:
            self.close()
            raise RuntimeError("the network namespace did not start (is this root, with unshare and ip?)")
        self.listeners = [socket.socket(fileno=fd) for fd in fds]

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespace."""
        return ["nsenter", f"--net=/proc/{self.holder.pid}/ns/net", "--", *argv]

    def close(self) -> None:
        self.control.close()  # the holder reads EOF and ends
        try:
            self.holder.wait(10)
        except subprocess.TimeoutExpired:
            self.holder.kill()
            self.holder.wait(10)
        for listener in getattr(self, "listeners", []):
            listener.close()


# --- askuser, as the CLI reaches it ------------------------------------------------------

CSRF = "agentclicsrftokenagentclicsrftok"  # an unmasked 32-character secret


@dataclass
class Askuser:
    """A Daphne serving askuser both here (``server.url``) and inside the namespace (``inside``)."""

    server: DaphneServer
    inside: str
    token: str
    login: str

    def page(self, path: str) -> str:
        """A page as the person's browser gets it."""
        response = httpx.get(
            f"{self.server.url}{path}", headers={"Cookie": f"sessionid={self.login}"}, timeout=DEADLINE
        )
        assert response.status_code == 200, response.status_code
        return response.text

    def hook_url(self, wait: float = 30, agent: str = "") -> str:
        return f"{self.inside}/api/v1/hooks?wait={wait:g}" + (f"&agent={agent}" if agent else "")

    def pending(self, within: float = DEADLINE) -> Prompt:
        """The hook's prompt, once a hook has asked it."""
        end = time.monotonic() + within
        while (prompt := Prompt.objects.filter(status=Prompt.Status.PENDING).select_related("session").first()) is None:
            assert time.monotonic() < end, "no hook asked askuser anything"
            time.sleep(0.02)
        return prompt

    def answer(self, prompt: Prompt, form: dict[str, str | list[str]]) -> None:
        """The person answers in the panel, as a browser posts it."""
        url = f"{self.server.url}/s/{prompt.session.key}/prompts/{prompt.pk}/answer"
        headers = {"Cookie": f"sessionid={self.login}; csrftoken={CSRF}", "X-CSRFToken": CSRF, "HX-Request": "true"}
        response = httpx.post(url, data={**form, "action": "answer"}, headers=headers, timeout=DEADLINE)
        assert response.status_code == 200, response.text


@pytest.fixture
def namespace():
    """A loopback-only network namespace with two listeners: the model fake's and askuser's."""
    made = Namespace(listeners=2)
    yield made
    made.close()


@pytest.fixture
def model(namespace):
    """The model fake, serving inside the namespace; a test gives it its script (``model.script = …``)."""
    fake = ModelFake(namespace.listeners[0], [])
    yield fake
    fake.stop()


@pytest.fixture
def askuser(namespace, start_server, token, owner) -> Askuser:
    inside = namespace.listeners[1]
    server = start_server(also=[inside])
    host, port = inside.getsockname()[:2]
    return Askuser(server, f"http://{host}:{port}", token, log_in(owner))


@pytest.fixture
def workdir(tmp_path) -> Path:
    """The project the agent works in: a Makefile whose ``make`` leaves ``built.txt``."""
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "Makefile").write_text("all:\n\techo built > built.txt\n")
    return folder


# --- Claude Code --------------------------------------------------------------------------


@dataclass
class ClaudeCode:
    """Claude Code with a home of its own (``CLAUDE_CONFIG_DIR``), its model the fake."""

    namespace: Namespace
    home: Path
    workdir: Path
    model_url: str
    token: str
    started: list[subprocess.Popen[str]] = field(default_factory=list)

    def settings(self, hooks: dict[str, Any]) -> None:
        """The user's ``settings.json``, with ``hooks`` as the hooks reference writes them."""
        config = self.home / ".claude"
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(json.dumps({"hooks": hooks}, indent=2))

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ["PATH"],
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
            "ANTHROPIC_BASE_URL": self.model_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-the-model-fake",
            "ASKUSER_TOKEN": self.token,
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    def debug_log(self) -> str:
        """What ``--debug`` wrote: every hook call and what came of it."""
        return "".join(
            log.read_text(errors="replace") for log in sorted((self.home / ".claude" / "debug").glob("*.txt"))
        )

    def interactive(self, prompt: str, terminals: Terminals, *options: str) -> Terminal:
        """Claude Code in a terminal, asking ``prompt`` at once, past its first-run screens (the
        onboarding, this folder's trust, the API key's approval: the state a person who has
        used it before has), in the permission mode that shows its own dialogs."""
        state = {
            "hasCompletedOnboarding": True,
            "theme": "dark",
            "projects": {str(self.workdir): {"hasTrustDialogAccepted": True}},
            "customApiKeyResponses": {"approved": [self.env()["ANTHROPIC_API_KEY"][-20:]], "rejected": []},
        }
        (self.home / ".claude").mkdir(parents=True, exist_ok=True)
        (self.home / ".claude" / ".claude.json").write_text(json.dumps(state))
        # The prompt first: ``--debug`` would take a word after it as its filter.
        argv = self.namespace.command([str(CLAUDE), prompt, "--permission-mode", "default", *options, "--debug"])
        return terminals.start(argv, {**self.env(), "TERM": "xterm-256color"}, self.workdir)

    def print_mode(self, prompt: str, *options: str) -> subprocess.Popen[str]:
        """``claude -p``: one prompt, run to its end (the caller waits for it)."""
        argv = self.namespace.command([str(CLAUDE), "-p", prompt, *options, "--debug"])
        return run(argv, self.env(), self.workdir, self.started)


def http_hook(url: str, timeout: int = 40) -> list[dict[str, Any]]:
    """One http hook calling askuser with the agent's token, as the README shows it."""
    hook = {
        "type": "http",
        "url": url,
        "headers": {"Authorization": "Bearer $ASKUSER_TOKEN"},
        "allowedEnvVars": ["ASKUSER_TOKEN"],
        "timeout": timeout,
    }
    return [{"hooks": [hook]}]


@pytest.fixture
def claude(namespace, model, askuser, workdir, tmp_path):
    made = ClaudeCode(namespace, tmp_path / "home", workdir, model.url, askuser.token)
    yield made
    stop_all(made.started)


def run(
    argv: Sequence[str], env: dict[str, str], cwd: Path, started: list[subprocess.Popen[str]]
) -> subprocess.Popen[str]:
    """The CLI started, its output read at its end (``finished``); killed with its fixture if
    the test ends first."""
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    started.append(process)
    return process


def stop_all(started: list[subprocess.Popen[str]]) -> None:
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def finished(process: subprocess.Popen[str], within: float = DEADLINE) -> str:
    """What the CLI printed (its last 4,000 characters, for a failure's message), once it has
    ended; killed, and the test failed, if it does not end in time."""
    try:
        out, err = process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"the CLI did not finish in {within} s:\n{(out + err)[-4000:]}") from None
    return (out + err)[-4000:]


# --- Codex ------------------------------------------------------------------------------


@dataclass
class Codex:
    """Codex with a home of its own (``CODEX_HOME``), its model provider the fake's Responses API."""

    namespace: Namespace
    home: Path
    workdir: Path
    model_url: str
    token: str
    started: list[subprocess.Popen[str]] = field(default_factory=list)

    def configure(self, hooks: dict[str, Any]) -> None:
        """``config.toml`` (the fake as the model provider) and ``hooks.json`` (Codex's hooks,
        command hooks only, in Claude Code's shape)."""
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(
            'model = "gpt-5.1-codex"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
            f'name = "model fake"\nbase_url = "{self.model_url}/v1"\nwire_api = "responses"\n'
            'env_key = "FAKE_OPENAI_KEY"\n\n'
            # What Codex would send elsewhere and wait on at exit (metrics, its plugin catalogue):
            # off, so that a run ends when its turn does.
            "[analytics]\nenabled = false\n\n[features]\nplugins = false\n\n"
            '[otel]\nexporter = "none"\ntrace_exporter = "none"\nmetrics_exporter = "none"\n'
        )
        (self.home / "hooks.json").write_text(json.dumps({"hooks": hooks}, indent=2))

    def exec(self, prompt: str) -> subprocess.Popen[str]:
        """``codex exec``: one prompt, run to its end. ``--approve-for-me`` is exec's way to ask
        for approvals at all (its default is never to ask), and a PermissionRequest hook
        decides them before any review; the hooks are this test's own, so their trust is
        not asked."""
        options = ["--skip-git-repo-check", "--approve-for-me", "--dangerously-bypass-hook-trust", "--ephemeral"]
        argv = self.namespace.command([str(CODEX), "exec", *options, prompt])
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.home.parent),
            "CODEX_HOME": str(self.home),
            "FAKE_OPENAI_KEY": "sk-fake-key-for-the-model-fake",
            "ASKUSER_TOKEN": self.token,
        }
        return run(argv, env, self.workdir, self.started)


def command_hook(url: str, timeout: int = 40) -> list[dict[str, Any]]:
    """One command hook that posts the event to askuser with curl, as the README shows it."""
    command = (
        "curl -sf --data-binary @- -H 'Content-Type: application/json' "
        f"-H \"Authorization: Bearer $ASKUSER_TOKEN\" '{url}'"
    )
    return [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]


@pytest.fixture
def codex(namespace, model, askuser, workdir, tmp_path):
    made = Codex(namespace, tmp_path / "home" / ".codex", workdir, model.url, askuser.token)
    yield made
    stop_all(made.started)


# --- a terminal ---------------------------------------------------------------------------


class Terminals:
    """The test's terminals (``terminals`` fixture), closed with it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.opened: list[Terminal] = []

    def start(self, argv: Sequence[str], env: dict[str, str], cwd: Path) -> Terminal:
        terminal = Terminal(self.folder / f"tmux-{len(self.opened)}.sock", argv, env, cwd)
        self.opened.append(terminal)
        return terminal

    def close(self) -> None:
        for terminal in self.opened:
            terminal.close()


@pytest.fixture
def terminals(tmp_path):
    opened = Terminals(tmp_path)
    yield opened
    opened.close()


class Terminal:
    """A program in a tmux session of its own (its own server socket), read as a person reads
    the screen: ``until_shows`` polls ``capture-pane`` until a text is on it."""

    def __init__(self, socket_path: Path, argv: Sequence[str], env: dict[str, str], cwd: Path) -> None:
        self.tmux = ["tmux", "-S", str(socket_path), "-f", "/dev/null"]
        # tmux hands a new session the server's environment, not the caller's: ``env -i``
        # gives the program exactly this one.
        command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv])
        start = ["new-session", "-d", "-x", "160", "-y", "50", "-c", str(cwd), command]
        # The pane stays when the program ends, so that what it said last can be read.
        keep = ["set-option", "-g", "remain-on-exit", "on"]
        subprocess.run([*self.tmux, *start, ";", *keep], check=True, env={"PATH": os.environ["PATH"]})

    def screen(self) -> str:
        return subprocess.run([*self.tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout

    def until_shows(self, text: str, within: float = DEADLINE) -> str:
        end = time.monotonic() + within
        while text not in (screen := self.screen()):
            assert time.monotonic() < end, f"the terminal never showed {text!r}; it shows:\n{screen}"
            time.sleep(0.05)
        return screen

    def press(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", *keys], check=True)

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)
