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
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.utils import translation

from askuser_app.models import Preferences
from askuser_app.runtime import caching
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


# How long the cache keeps a person's choice: every save and delete of their
# preferences forgets it at once; this bounds a change made without either.
KEPT_SECONDS = 3600


def _cache_key(user_id: Any) -> str:
    return f"askuser:language:{user_id}"


def _stored(user_id: Any) -> str:
    """The person's choice, kept in the cache the logins are kept in: a page
    request reads neither the login nor the language from the database."""
    key = _cache_key(user_id)
    language = caching.read(key).get(key)
    if language is None:
        language = Preferences.objects.filter(user_id=user_id).values_list("language", flat=True).first() or ""
        caching.keep(key, language, KEPT_SECONDS)
    return supported(language)


def forget(sender: Any, instance: Preferences, **kwargs: Any) -> None:
    """A person's preferences saved or deleted: their language is read again
    (connected in ``AskuserAppConfig.ready`` for every save and delete); again
    once the change commits, so that nothing read before then stays kept."""
    key = _cache_key(instance.user_id)
    caching.forget(key)
    transaction.on_commit(lambda: caching.forget(key), robust=True)


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
