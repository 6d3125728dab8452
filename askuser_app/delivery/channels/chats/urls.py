"""``/chat/<name>/…``: each installed chat app's inbound endpoints, 404 while it is off."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import Http404
from django.urls import URLPattern, include, path

from askuser_app.delivery import channels
from askuser_app.delivery.channels.base import Adapter, ChatApp


def _when_configured(adapter: Adapter, view: Callable[..., Any]) -> Callable[..., Any]:
    """``view``, answering 404 while ``adapter`` lacks its settings (read per request)."""
    if iscoroutinefunction(view):

        async def guarded_async(*args: Any, **kwargs: Any) -> Any:
            if not adapter.configured():
                raise Http404
            return await view(*args, **kwargs)

        return markcoroutinefunction(functools.wraps(view)(guarded_async))

    @functools.wraps(view)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if not adapter.configured():
            raise Http404
        return view(*args, **kwargs)

    return guarded


def _guarded(adapter: ChatApp) -> list[URLPattern]:
    return [
        # An unnamed pattern stays unnamed: path() takes None, though its stubs say str.
        path(str(p.pattern), _when_configured(adapter, p.callback), p.default_args, name=cast(str, p.name))
        for p in adapter.urlpatterns()
    ]


app_name = "chat"
urlpatterns = [path(f"{name}/", include(_guarded(adapter))) for name, adapter in channels.installed_chat_apps().items()]
