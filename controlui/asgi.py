"""ASGI entry point: HTTP (long-poll in front of Django) and WebSockets."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlui.settings")

from django.core.asgi import get_asgi_application

# Build Django first: the routing below imports models.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from askuser_app import routing  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": routing.HttpRouter(django_asgi_app),
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(routing.websocket_urlpatterns))),
        "lifespan": routing.lifespan,
    }
)
