"""Security headers every response Django makes gets, beside Django's SecurityMiddleware:
``runtime.http.own_headers``, the same the responses made in front of Django carry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse

from askuser_app.runtime.http import own_headers


class SecurityHeadersMiddleware:
    """Adds the Content-Security-Policy (the page's, or JSON's) and Permissions-Policy headers."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        return self._secure(self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self._secure(await self.get_response(request))

    @staticmethod
    def _secure(response: HttpResponse) -> HttpResponse:
        data = response.get("Content-Type", "").startswith("application/json")
        for name, value in own_headers(data=data).items():
            response.headers.setdefault(name, value)
        return response
