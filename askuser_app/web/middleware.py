"""Security headers every page gets, beside Django's SecurityMiddleware."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse

# No inline script or style anywhere: htmx is configured not to inject styles
# or evaluate code, and our own JavaScript is a static file.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
}


class SecurityHeadersMiddleware:
    """Adds the Content-Security-Policy and Permissions-Policy headers."""

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
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        return response
