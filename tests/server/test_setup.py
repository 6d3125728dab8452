"""The first hour of a new operator: make run's demo login, adding people and agents, the next steps."""

from __future__ import annotations

import io
import logging

import httpx
import pytest
from django.contrib.auth import authenticate as django_authenticate
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import RequestFactory

from askuser_app.management.commands import demo_agent, mcp_stdio
from askuser_app.models import Agent
from askuser_client.client import AskUserClient, ServerUnavailableError
from tests.conftest import make_user


def authenticate(*, username: str, password: str):
    """Log in as the login page would: with a request, which login throttling needs."""
    return django_authenticate(RequestFactory().post("/login/"), username=username, password=password)


@pytest.fixture
def data_dir(settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.delenv("ASKUSER_URL", raising=False)
    return tmp_path


def setupdemo(url: str) -> str:
    out = io.StringIO()
    call_command("setupdemo", url=url, stdout=out)
    return out.getvalue()


# --- the demo login -------------------------------------------------------------------


def test_on_loopback_the_demo_login_is_demo_demo_and_staff_but_not_superuser(db, data_dir):
    shown = setupdemo("http://127.0.0.1:8000")

    demo = authenticate(username="demo", password="demo")
    assert demo is not None and "demo / demo" in shown
    assert demo.is_staff and not demo.is_superuser
    assert demo.has_perm("askuser_app.view_prompt") and not demo.has_perm("askuser_app.change_prompt")


def test_an_earlier_superuser_demo_login_is_made_an_ordinary_reviewer(db, data_dir):
    make_user("demo", is_staff=True, is_superuser=True)

    setupdemo("http://localhost:8000")

    demo = get_user_model().objects.get(username="demo")
    assert demo.is_staff and not demo.is_superuser


@pytest.mark.parametrize("url", ["http://0.0.0.0:8000", "http://192.168.1.20:8000", "http://askuser.example.com"])
def test_beyond_loopback_the_demo_login_gets_a_generated_password_shown_once(db, data_dir, url):
    shown = setupdemo(url)

    assert authenticate(username="demo", password="demo") is None
    password = shown.split("Log in as:")[1].split("/")[1].split()[0]
    assert len(password) >= 12 and authenticate(username="demo", password=password) is not None
    assert "shown only now" in shown
    assert password not in setupdemo(url)  # never printed again


def test_a_demo_login_with_the_known_password_gets_a_new_one_when_the_server_goes_beyond_loopback(db, data_dir):
    setupdemo("http://127.0.0.1:8000")

    shown = setupdemo("http://0.0.0.0:8000")

    assert authenticate(username="demo", password="demo") is None
    assert "demo / demo" not in shown


def test_the_demo_prints_the_webhook_secret_with_the_token(db, data_dir):
    shown = setupdemo("http://127.0.0.1:8000")

    agent = Agent.objects.get(name="demo")
    assert f"Webhook secret:    {agent.webhook_secret}" in shown


# --- the server's address, remembered for the next steps ------------------------------------


def default_url(command: type) -> str:
    return command.Command().create_parser("manage.py", "x").parse_args([]).url


@pytest.mark.parametrize("command", [demo_agent, mcp_stdio], ids=["demo_agent", "mcp_stdio"])
def test_the_next_steps_talk_to_the_port_make_run_serves_on(db, data_dir, command):
    setupdemo("http://127.0.0.1:8765")

    assert default_url(command) == "http://127.0.0.1:8765"
    assert oct((data_dir / "server-url").stat().st_mode & 0o777) == oct(0o600)


def test_a_server_on_every_address_is_reached_on_loopback(db, data_dir):
    setupdemo("http://0.0.0.0:8765")

    assert default_url(demo_agent) == "http://127.0.0.1:8765"


def test_askuser_url_still_wins_over_the_remembered_address(db, data_dir, monkeypatch):
    setupdemo("http://127.0.0.1:8765")
    monkeypatch.setenv("ASKUSER_URL", "http://askuser.internal:9000")

    assert default_url(mcp_stdio) == "http://askuser.internal:9000"


def test_a_refused_connection_says_where_it_tried_before_retrying(caplog):
    said_before_the_retry: list[str] = []

    def server(request: httpx.Request) -> httpx.Response:
        if not said_before_the_retry:
            said_before_the_retry.append("")
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        said_before_the_retry[0] = caplog.text
        return httpx.Response(200, json={"name": "ask_user"})

    caplog.set_level(logging.WARNING, logger="askuser.client")
    with AskUserClient("http://127.0.0.1:8765", "au_x", transport=httpx.MockTransport(server)) as client:
        assert client.tool_definition() == {"name": "ask_user"}

    assert (
        "could not connect to http://127.0.0.1:8765: connection refused (is `make run` running?)"
        in (said_before_the_retry[0])
    )


def test_an_unreachable_server_error_names_the_address():
    def server(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    with (
        AskUserClient("http://127.0.0.1:8765", "au_x", transport=httpx.MockTransport(server), retry_for=0) as client,
        pytest.raises(ServerUnavailableError, match=r"http://127.0.0.1:8765 could not be reached: connection refused"),
    ):
        client.tool_definition()


# --- people and agents ------------------------------------------------------------------------


def test_adduser_makes_an_ordinary_person_with_a_password_shown_once(db):
    out = io.StringIO()

    call_command("adduser", "alice", "--email", "alice@example.com", "--no-input", stdout=out)

    alice = get_user_model().objects.get(username="alice")
    password = out.getvalue().split("shown only now):")[1].split()[0]
    assert authenticate(username="alice", password=password) == alice
    assert not alice.is_staff and not alice.is_superuser and alice.email == "alice@example.com"
    assert "createagent NAME --owner alice" in out.getvalue()


def test_adduser_reviewer_may_read_the_history_and_nothing_more(db):
    call_command("adduser", "rita", "--reviewer", "--no-input", stdout=io.StringIO())

    rita = get_user_model().objects.get(username="rita")
    assert rita.is_staff and not rita.is_superuser
    assert rita.has_perm("askuser_app.view_prompt") and not rita.has_perm("askuser_app.change_prompt")


def test_adduser_refuses_an_existing_username(owner):
    with pytest.raises(CommandError, match="already exists"):
        call_command("adduser", "alice", "--no-input", stdout=io.StringIO())


def test_createagent_for_an_unknown_owner_points_to_adduser_not_createsuperuser(db):
    with pytest.raises(CommandError) as refused:
        call_command("createagent", "my-agent", "--owner", "alice", stdout=io.StringIO())

    assert "manage.py adduser alice" in str(refused.value)
    assert "createsuperuser" not in str(refused.value)
