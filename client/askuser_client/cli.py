"""The ``askuser`` command: ``hook`` (run by the agent), ``install`` and ``doctor`` (run by you)."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from askuser_client import doctor
from askuser_client.hook import (
    AGENTS,
    DEFAULT_URL,
    DEFAULT_WAIT,
    TOKEN_VARIABLE,
    URL_VARIABLE,
    Hook,
    HookFailed,
    printed,
)
from askuser_client.install import InstallError, Plan, install, settings_path


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="askuser", description="Let a coding agent's hooks ask you through askuser.")
    commands = main.add_subparsers(dest="command", required=True)
    url_help = f"the askuser server's address (default: ${URL_VARIABLE}, else {DEFAULT_URL})"

    hook = commands.add_parser("hook", help="the agent's hook: the event on stdin, the decision on stdout")
    hook.add_argument("--url", help=url_help)
    hook.add_argument("--wait", type=float, default=DEFAULT_WAIT, help="seconds the person has to answer")
    hook.add_argument("--agent", choices=AGENTS, default=AGENTS[0], help="the agent that runs the hook")

    setup = commands.add_parser("install", help="write askuser's hooks into the agent's settings")
    setup.add_argument("agent", choices=AGENTS)
    setup.add_argument("--url", help=url_help)
    setup.add_argument("--wait", type=float, default=DEFAULT_WAIT, help="seconds the person has to answer")
    setup.add_argument("--http", action="store_true", help="Claude Code's http hook instead of the command hook")
    setup.add_argument("--project", nargs="?", const=".", help="a project's .claude/settings.json (Claude Code)")
    setup.add_argument("--print", action="store_true", help="print the settings block instead of writing it")

    check = commands.add_parser("doctor", help="say what stands between the agent's hooks and you")
    check.add_argument("agent", nargs="?", choices=AGENTS, help="the agent to check (default: each one set up)")
    check.add_argument("--url", help=f"the askuser server's address (default: ${URL_VARIABLE}, else the hooks')")
    check.add_argument("--project", default=".", help="the project whose .claude/ settings to read too")
    return main


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    run = {"hook": run_hook, "install": run_install, "doctor": run_doctor}[arguments.command]
    return run(arguments)


def run_hook(arguments: argparse.Namespace) -> int:
    """Never fails the agent: whatever goes wrong is one line on stderr, nothing on stdout, exit 0."""
    event = sys.stdin.buffer.read()
    hook = Hook(arguments.url or os.environ.get(URL_VARIABLE) or DEFAULT_URL, arguments.wait, arguments.agent)
    try:
        output = printed(hook.answer(event, os.environ.get(TOKEN_VARIABLE)))
    except HookFailed as failed:
        print(f"askuser: {failed}; the agent decides without askuser", file=sys.stderr)
        return 0
    if output:
        print(output)
    return 0


def run_install(arguments: argparse.Namespace) -> int:
    url = arguments.url or os.environ.get(URL_VARIABLE) or DEFAULT_URL
    plan = Plan(arguments.agent, url.rstrip("/"), arguments.wait, arguments.http, this_program())
    try:
        if arguments.print:
            plan.check()
            print(plan.printed())
            return 0
        done = install(plan, settings_path(arguments.agent, arguments.project))
    except InstallError as error:
        print(f"askuser: {error}", file=sys.stderr)
        return 1
    if not done.changed:
        print(f"{done.path}: askuser's hooks are already these; nothing changed")
    else:
        print(f"{done.path}: askuser's hooks written" + (f" (the old file is {done.backup})" if done.backup else ""))
        print(f"Set {TOKEN_VARIABLE} to the agent's token in the environment {arguments.agent} starts in.")
    return 0


def run_doctor(arguments: argparse.Namespace) -> int:
    agents = [arguments.agent] if arguments.agent else []
    url = arguments.url or os.environ.get(URL_VARIABLE)
    try:
        findings = doctor.diagnose(agents, url, os.environ.get(TOKEN_VARIABLE), Path(arguments.project))
    except InstallError as error:
        print(f"problem: {error}")
        return 1
    for finding in findings:
        print(finding)
    return 0 if all(finding.ok for finding in findings) else 1


def this_program() -> str:
    """How an agent starts this command: ``askuser`` when that is this one on PATH, else its full path."""
    me = Path(sys.argv[0]).resolve()
    found = shutil.which("askuser")
    if found and Path(found).resolve() == me:
        return "askuser"
    if me.name == "askuser" and me.is_file():
        return shlex.quote(str(me))
    return f"{shlex.quote(sys.executable)} -m askuser_client"


if __name__ == "__main__":
    sys.exit(main())
