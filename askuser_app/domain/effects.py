"""What follows each state change of ``services``, declared in one typed place.

``services`` changes a prompt's state and then says, at the change, what follows it:
``effects.prompt_created(prompt)``, ``effects.prompt_resolved(prompt, result)``… Each of these
is a method of ``Effects`` below, and the one implementation, the assembled server's
(``askuser_app/server/effects.py``, installed when the app is ready), does every part's work
for it in one visible list: the live pages and waits, the webhook, every channel's message,
the deadline loop. A reader follows a create or an answer from here to every channel.

The domain imports no other package of the app, so it holds the implementation only as the
``Effects`` it declares. Each effect is called *inside* the transaction that makes the change,
so what it writes (a message's delivery, a webhook's) commits with it, and an implementation
defers what others can see (an announcement, a wake-up) to ``transaction.on_commit``. An effect
that raises rolls the change back: nothing follows a change the database does not hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from askuser_app.models import Message, Prompt


@runtime_checkable
class Effects(Protocol):
    """Everything that follows a change, one method per kind of change."""

    def prompt_created(self, prompt: Prompt) -> None:
        """A prompt was stored, pending."""
        ...

    def prompt_resolved(self, prompt: Prompt, result: dict[str, Any]) -> None:
        """The one transition out of pending happened; ``result`` is what the agent reads."""
        ...

    def prompt_extended(self, prompt: Prompt) -> None:
        """A person moved the deadline: ``prompt`` as it now stands."""
        ...

    def message_created(self, message: Message) -> None:
        """A chat message was stored (an agent's, a person's, or askuser's own note)."""
        ...

    def agent_news(self, message: Message, *, finished: bool) -> None:
        """A coding agent's news for the person (a ``post_agent_note`` that tells): waiting for
        their input, or (``finished``) done, which they hear of only if they chose to."""
        ...


class _NotInstalled:
    """Before the app is ready nothing may change state: saying so beats doing nothing."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"effects.{name}: no Effects installed; the app is not ready (apps.ready installs them)")


_installed: Effects = _NotInstalled()


def install(effects: Effects) -> Effects:
    """Make ``effects`` what follows every change from now on; returns the one it replaces."""
    global _installed
    previous, _installed = _installed, effects
    return previous


def installed() -> Effects:
    return _installed


# What ``services`` calls, one function per effect, so that the change reads ``effects.prompt_created(prompt)``.


def prompt_created(prompt: Prompt) -> None:
    _installed.prompt_created(prompt)


def prompt_resolved(prompt: Prompt, result: dict[str, Any]) -> None:
    _installed.prompt_resolved(prompt, result)


def prompt_extended(prompt: Prompt) -> None:
    _installed.prompt_extended(prompt)


def message_created(message: Message) -> None:
    _installed.message_created(message)


def agent_news(message: Message, *, finished: bool) -> None:
    _installed.agent_news(message, finished=finished)
