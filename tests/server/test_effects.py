"""What follows a change (askuser_app/domain/effects.py): the server does exactly what that one
place declares, and each change of ``services`` names its effect there, inside its transaction."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.dispatch import Signal

import askuser_app.domain
from askuser_app.domain import effects, services
from askuser_app.domain.effects import Effects
from askuser_app.server.effects import Assembled
from tests.conftest import ask


def declared() -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(Effects).items()
        if callable(member) and not name.startswith("_")
    }


def test_the_server_does_every_declared_effect_and_nothing_undeclared():
    assert isinstance(effects.installed(), Assembled)
    done = {name: inspect.signature(member) for name, member in vars(Assembled).items() if not name.startswith("_")}
    assert done == declared()
    # services says each one by the module's function of the same name and signature.
    said = {name: inspect.signature(getattr(effects, name)) for name in declared()}
    assert {name: list(sig.parameters) for name, sig in said.items()} == {
        name: list(sig.parameters)[1:] for name, sig in declared().items()
    }


def test_the_domain_announces_nothing_beside_its_effects():
    """No signal a receiver could be wired to out of sight: ``effects`` is the one way out."""
    for found in pkgutil.iter_modules(askuser_app.domain.__path__):
        module = importlib.import_module(f"askuser_app.domain.{found.name}")
        assert not [name for name, value in vars(module).items() if isinstance(value, Signal)], found.name


class Recording:
    """The server's effects, each also noted with whether a transaction was open around it."""

    def __init__(self, inner: Effects) -> None:
        self.inner = inner
        self.trail: list[tuple[str, bool]] = []

    def __getattr__(self, name: str) -> Any:
        done = getattr(self.inner, name)

        def noted(*args: Any, **kwargs: Any) -> Any:
            self.trail.append((name, connection.in_atomic_block))
            return done(*args, **kwargs)

        return noted


@pytest.fixture
def recording() -> Iterator[Recording]:
    recorder = Recording(effects.installed())
    previous = effects.install(recorder)
    try:
        yield recorder
    finally:
        effects.install(previous)


@pytest.mark.django_db(transaction=True)
def test_each_change_names_its_effect_inside_its_transaction(agent, owner, recording, settings):
    settings.ASKUSER_EXTEND_SECONDS = 60
    deploy = {"id": "deploy", "question": "Deploy?", "header": "Deploy", "options": [{"label": "Yes"}, {"label": "No"}]}
    prompt = ask(agent, deploy)
    services.extend(prompt, by=owner, surface="web")
    services.post_user_message(prompt.session, owner, "Yes")  # read as the reply: a message, then an answer
    services.post_agent_note(agent, prompt.session.key, "Claude Code is waiting for your input", tell="waiting")

    assert recording.trail == [
        ("prompt_created", True),
        ("prompt_extended", True),
        ("message_created", True),
        ("prompt_resolved", True),
        ("message_created", True),
        ("agent_news", True),
    ]
