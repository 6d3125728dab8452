"""Where each ASGI connection goes: HTTP through the front door, sockets to consumers."""

from __future__ import annotations

from django.core.wsgi import get_wsgi_application
from django.urls import URLPattern, path, re_path

from askuser_app.agents import create as agentwrites
from askuser_app.agents.hooks import HookCall
from askuser_app.agents.waits import MessagesWait, PromptWait
from askuser_app.runtime import http
from askuser_app.server import edge, keptthreads, metrics
from askuser_app.web.consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/sessions/", LiveConsumer.as_asgi()),
    path("ws/sessions/<str:key>/", LiveConsumer.as_asgi()),
]


def http_urlpatterns(django_app: http.App) -> list[URLPattern]:
    """The long-polls, the hooks, the create, health, metrics and MCP in front of Django; the panel's
    answer to Django on threads kept for it; everything else to Django."""

    def waits(consumer: type[PromptWait | MessagesWait]) -> edge.ByMethod:
        # Only reads wait; the path's other methods (posting a message) are the API's.
        wait = consumer.as_asgi()
        return edge.ByMethod({"GET": wait, "HEAD": wait}, otherwise=django_app)

    hook = edge.ByMethod({"POST": HookCall.as_asgi()}, otherwise=django_app)
    answers = edge.ByMethod({"POST": keptthreads.OnKeptThreads(get_wsgi_application())}, otherwise=django_app)
    # Channels routes ASGI applications through Django's path(); its stubs allow views only.
    return [
        path("healthz", edge.health),  # type: ignore[arg-type]
        path("metrics", metrics.Endpoint(otherwise=django_app)),  # type: ignore[arg-type]
        re_path(r"^api/v1/prompts/?$", agentwrites.CreateRoute(otherwise=django_app)),  # type: ignore[arg-type]
        re_path(r"^api/v1/prompts/(?P<prompt_id>[^/]+)/?$", waits(PromptWait)),  # type: ignore[arg-type]
        re_path(r"^api/v1/sessions/(?P<key>[^/]+)/messages/?$", waits(MessagesWait)),  # type: ignore[arg-type]
        re_path(r"^api/v1/hooks/?$", hook),  # type: ignore[arg-type]
        re_path(r"^mcp/?$", edge.mcp),  # type: ignore[arg-type]
        re_path(r"^s/(?P<key>[^/]+)/prompts/(?P<prompt_id>[^/]+)/answer$", answers),  # type: ignore[arg-type]
        re_path(r"", django_app),  # type: ignore[arg-type]
    ]
