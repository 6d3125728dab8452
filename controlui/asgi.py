"""ASGI entry point: HTTP (long-poll in front of Django) and WebSockets."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlui.settings")

from askuser_app.handler import get_api_application, get_asgi_application

# Build Django first: the routing below imports models.
django_asgi_app = get_asgi_application()
api_asgi_app = get_api_application(django_asgi_app)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from askuser_app import routing  # noqa: E402
from askuser_app.origins import SameOriginValidator  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": routing.HttpRouter(django_asgi_app, api_asgi_app),
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(routing.websocket_urlpatterns))),
        "lifespan": routing.lifespan,
    }
)
