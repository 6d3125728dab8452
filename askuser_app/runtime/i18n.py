"""The person's language: the one they chose, else their browser's (README "Languages").

Django's LocaleMiddleware reads the browser's (the language cookie, then
Accept-Language); ``PersonLanguageMiddleware``, once the person is known, puts
their stored choice (``Preferences.language``) above it. Where no browser asks
(a chat message, a push), the owner's choice or English.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation

from askuser_app.models import Preferences
from askuser_app.runtime.asyncdb import database_call

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

# The agent API speaks English (the contract) and static files have no language: no lookup.
UNTRANSLATED_PATHS = ("/api/", "/static/")


def supported(code: str | None) -> str:
    """``code`` if it is one of the Control UI's languages, else ""."""
    return code if code and code in dict(settings.LANGUAGES) else ""


def chosen(user: AbstractBaseUser | AnonymousUser | None) -> str:
    """The language the person chose, or "" (their browser's decides)."""
    if user is None or not user.is_authenticated:
        return ""
    return _stored(user.pk)


def _stored(user_id: Any) -> str:
    """The person's choice, read from their preferences."""
    return supported(Preferences.objects.filter(user_id=user_id).values_list("language", flat=True).first())


def choose(user: AbstractBaseUser, language: str) -> None:
    """Keep the person's language ("" to follow the browser again)."""
    Preferences.objects.update_or_create(user_id=user.pk, defaults={"language": supported(language)})


def of_owner(user_id: Any) -> str:
    """The language to write to a person in when no browser is asking (a chat message, an
    email, a push, a page's live updates): their choice, else English."""
    return (_stored(user_id) if user_id is not None else "") or settings.LANGUAGE_CODE


class PersonLanguageMiddleware:
    """Activates a logged-in person's chosen language, over the browser's."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        if not request.path.startswith(UNTRANSLATED_PATHS):
            self._activate(request, chosen(request.user))
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(UNTRANSLATED_PATHS):
            user = await request.auser()
            if user.is_authenticated:
                self._activate(request, await database_call(chosen)(user))
        response: HttpResponse = await self.get_response(request)
        return response

    @staticmethod
    def _activate(request: HttpRequest, language: str) -> None:
        if language:
            translation.activate(language)
            request.LANGUAGE_CODE = language
