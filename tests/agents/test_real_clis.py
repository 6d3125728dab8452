"""The real Claude Code and Codex CLIs, offline in a loopback-only network namespace, asking
askuser through their hooks while a model fake plays the model (tests/agentclis.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from askuser_app.models import Prompt
from tests.agentclis import DEADLINE, HOW, REQUIRED, command_hook, finished, http_hook
from tests.modelfake import Request, Say, Tool

pytestmark = [
    pytest.mark.agent_clis,
    pytest.mark.live,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not REQUIRED, reason=HOW),
]

MAKE = [Tool("Bash", {"command": "make", "description": "Build"})]


def test_the_clis_run_where_nothing_but_loopback_is(namespace):
    def inside(*argv: str) -> str:
        return subprocess.run(namespace.command(argv), capture_output=True, text=True, check=True).stdout

    assert [line.split(":")[1].strip() for line in inside("ip", "-o", "link").splitlines()] == ["lo"]
    assert inside("ip", "route").strip() == ""  # no way anywhere but 127.0.0.0/8


def test_allow_in_askuser_runs_the_command(claude, model, askuser, workdir):
    model.script = [MAKE, [Say("Built.")]]
    claude.settings({"PermissionRequest": http_hook(askuser.hook_url())})
    running = claude.print_mode("Build the project")

    prompt = askuser.pending()
    assert prompt.questions.get().detail.splitlines()[0] == "make"  # the command, read first
    askuser.answer(prompt, {"q-permission": "0"})

    printed = finished(running)
    assert (workdir / "built.txt").read_text() == "built\n", printed
    assert "echo built > built.txt" in model.tool_results()[-1]


def test_deny_in_askuser_blocks_the_command_and_the_model_reads_the_persons_reason(claude, model, askuser, workdir):
    model.script = [MAKE, [Say("Understood.")]]
    claude.settings({"PermissionRequest": http_hook(askuser.hook_url())})
    running = claude.print_mode("Build the project")

    askuser.answer(askuser.pending(), {"q-permission-other": "Not on a Friday, please"})

    finished(running)
    assert not (workdir / "built.txt").exists()
    assert "Not on a Friday, please" in model.tool_results()[-1], model.tool_results()


def test_askuser_down_is_a_non_blocking_error_and_the_agent_carries_on(claude, model, askuser, namespace, workdir):
    model.script = [MAKE, [Say("I could not build it.")]]
    askuser.server.stop()
    namespace.listeners[1].close()  # nothing listens at askuser's address: the hook is refused
    claude.settings({"PermissionRequest": http_hook(askuser.hook_url())})

    finished(claude.print_mode("Build the project"))
    assert "ECONNREFUSED" in claude.debug_log()  # the hook was called, and failed
    assert not (workdir / "built.txt").exists()
    assert model.tool_results() == ["This command requires approval"]  # its own refusal: nobody to ask in -p


# --- Codex --------------------------------------------------------------------------------

CODEX_MAKE = [
    Tool("exec_command", {"cmd": "make", "sandbox_permissions": "require_escalated", "justification": "Build?"})
]


def test_codex_runs_the_command_allowed_in_askuser(codex, model, askuser, workdir):
    model.script = [CODEX_MAKE, [Say("Built.")]]
    codex.configure({"PermissionRequest": command_hook(askuser.hook_url(agent="Codex"))})
    running = codex.exec("Build the project")

    prompt = askuser.pending()
    assert prompt.session.title == f"Codex · {workdir.name}"
    assert prompt.questions.get().detail.splitlines()[0] == "make"
    askuser.answer(prompt, {"q-permission": "0"})

    printed = finished(running)
    assert (workdir / "built.txt").read_text() == "built\n", printed
    assert "echo built > built.txt" in model.tool_results()[-1]


def test_codex_does_not_run_the_command_denied_in_askuser(codex, model, askuser, workdir):
    model.script = [CODEX_MAKE, [Say("Understood.")]]
    codex.configure({"PermissionRequest": command_hook(askuser.hook_url(agent="Codex"))})
    running = codex.exec("Build the project")

    askuser.answer(askuser.pending(), {"q-permission-other": "Not on a Friday, please"})

    finished(running)
    assert not (workdir / "built.txt").exists()
    assert "Not on a Friday, please" in model.tool_results()[-1], model.tool_results()


# --- Claude Code in a terminal -------------------------------------------------------------


def after_the_decision(askuser) -> dict:
    """The events that come once the agent decided (the recommended settings'), beside the
    PermissionRequest that asks; its wait is long, so that only they can close the question."""
    told = http_hook(askuser.hook_url(wait=0), timeout=10)
    events = ("PostToolUse", "PostToolUseFailure", "PermissionDenied", "UserPromptSubmit", "Stop", "Notification")
    return {"PermissionRequest": http_hook(askuser.hook_url(wait=60), timeout=70), **dict.fromkeys(events, told)}


def test_a_terminal_answer_closes_askusers_question_as_decided_at_the_terminal(
    claude, model, askuser, workdir, terminals
):
    model.script = [MAKE, [Say("Built.")]]
    claude.settings(after_the_decision(askuser))
    terminal = claude.interactive("Build the project", terminals)
    prompt = askuser.pending()
    terminal.until_shows("Do you want to proceed?")  # its own dialog, beside askuser's question

    terminal.press("1")  # Yes, at the terminal

    model.wait_for(lambda fake: len(fake.conversation()) == 2, DEADLINE)  # the command's output went back
    assert (workdir / "built.txt").read_text() == "built\n"
    end = time.monotonic() + 5
    while Prompt.objects.get(pk=prompt.pk).is_pending:
        assert time.monotonic() < end, "askuser's question is still open after the terminal decided"
        time.sleep(0.05)
    assert "Decided at the terminal" in askuser.page(f"/s/{prompt.session.key}/")


# --- an MCP server's request for input -----------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
CREATE_WORKSPACE = [Tool("mcp__billing__create_workspace", {})]


def test_an_mcp_servers_form_answered_in_askuser_reaches_the_server_typed(claude, model, askuser, workdir):
    """Claude Code ``-p`` calls a tool of a small MCP server of this test's own, which asks for
    a form; the person answers it in askuser, and the MCP server receives ``accept`` with the
    typed content."""
    received = workdir / "elicited.json"
    server = {
        "command": sys.executable,
        "args": ["-m", "tests.mcpelicit", str(received)],
        "env": {"PYTHONPATH": str(ROOT)},
    }
    config = workdir / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"billing": {"type": "stdio", **server}}}))
    model.script = [CREATE_WORKSPACE, [Say("Created.")]]
    claude.settings({"Elicitation": http_hook(askuser.hook_url())})
    running = claude.print_mode(
        "Create a workspace",
        "--mcp-config",
        str(config),
        "--strict-mcp-config",
        "--allowedTools",
        "mcp__billing__create_workspace",
    )

    prompt = askuser.pending()
    assert [q.key for q in prompt.questions.all()] == ["plan", "seats"]
    assert prompt.questions.get(key="plan").detail.startswith("billing asks: Which plan")
    askuser.answer(prompt, {"q-plan": "1", "q-seats-other": "12"})

    printed = finished(running)
    assert json.loads(received.read_text()) == {"action": "accept", "content": {"plan": "pro", "seats": 12}}, printed
    said = json.loads(model.tool_results()[-1])  # the tool's result, as the model reads it
    assert said == {"result": 'workspace: accept {"plan": "pro", "seats": 12}'}


# --- a plan to approve ---------------------------------------------------------------------


PLAN = "## Retry the upload\n\n1. Wrap `upload()` in a retry\n2. Test it"


def write_the_plan(request: Request) -> list[Tool]:
    """The model writes its plan to the file plan mode names (a new name each run), as a model does."""
    path = re.search(r"/[^\s\"']*/\.claude/plans/[\w.-]+\.md", json.dumps(request.body))
    assert path is not None, "plan mode named no plan file"
    return [Tool("Write", {"file_path": path.group(), "content": PLAN})]


def test_a_plan_approved_in_askuser_takes_claude_code_out_of_plan_mode(claude, model, askuser, terminals):
    model.script = [write_the_plan, [Tool("ExitPlanMode", {})], [Say("Starting on the plan.")]]
    hook = [{**group, "matcher": "ExitPlanMode"} for group in http_hook(askuser.hook_url(wait=60), timeout=70)]
    told = http_hook(askuser.hook_url(wait=0), timeout=10)
    claude.settings({"PreToolUse": hook, "PermissionRequest": hook, "Notification": told})
    terminal = claude.interactive("Plan a retry for the upload", terminals, "--permission-mode", "plan")

    prompt = askuser.pending()
    assert prompt.hook_kind == "plan"
    assert prompt.questions.get().detail == PLAN  # the plan the model wrote, read from its file
    assert "<h2>Retry the upload</h2>" in askuser.page(f"/s/{prompt.session.key}/")
    askuser.answer(prompt, {"q-plan": "0"})  # Approve

    model.wait_for(lambda fake: len(fake.conversation()) == 3, DEADLINE)  # the plan's answer went back
    result = model.tool_results()[-1]
    assert "approved" in result.lower(), result  # "User has approved exiting plan mode. …"
    assert Prompt.objects.count() == 1  # its PermissionRequest, if any, asked nothing again
    terminal.until_shows("Starting on the plan.")


# --- a structured question -----------------------------------------------------------------

ASKED = {
    "questions": [
        {
            "question": "Which library should parse the dates?",
            "header": "Library",
            "options": [
                {"label": "dateutil", "description": "Already a dependency", "preview": "parse('5 Dec')"},
                {"label": "Arrow", "description": "A new dependency"},
            ],
            "multiSelect": False,
        },
        {
            "question": "Which formats must it accept?",
            "header": "Formats",
            "options": [
                {"label": "ISO 8601", "description": "2026-12-05"},
                {"label": "RFC 2822", "description": "Sat, 05 Dec 2026"},
                {"label": "Unix time", "description": "Seconds since 1970"},
            ],
            "multiSelect": True,
        },
        {
            "question": "What should a bad date do?",
            "header": "Errors",
            "options": [
                {"label": "Raise", "description": "A ValueError"},
                {"label": "Return None", "description": "The caller checks"},
            ],
            "multiSelect": False,
        },
    ]
}


def test_questions_answered_in_askuser_reach_the_model_as_the_tools_result(claude, model, askuser, terminals):
    model.script = [[Tool("AskUserQuestion", ASKED)], [Say("Parsing with dateutil.")]]
    hook = [{**group, "matcher": "AskUserQuestion"} for group in http_hook(askuser.hook_url(wait=60), timeout=70)]
    claude.settings({"PreToolUse": hook, "PermissionRequest": hook})
    terminal = claude.interactive("Add date parsing", terminals)

    prompt = askuser.pending()
    assert prompt.hook_kind == "question"
    assert [q.text for q in prompt.questions.all()] == [q["question"] for q in ASKED["questions"]]
    askuser.answer(prompt, {"q-q1": "0", "q-q2": ["0", "2"], "q-q3-other": "Log it and keep the raw text"})

    model.wait_for(lambda fake: len(fake.conversation()) == 2, DEADLINE)  # the answers went back
    result = model.tool_results()[-1]
    for said in (
        '"Which library should parse the dates?"="dateutil"',
        '"Which formats must it accept?"="ISO 8601, Unix time"',
        '"What should a bad date do?"="Log it and keep the raw text"',
    ):
        assert said in result, result
    assert Prompt.objects.count() == 1  # its PermissionRequest asked nothing again
    terminal.until_shows("Parsing with dateutil.")
