"""ASGI entry point: HTTP through the front door (long-polls and creates, then Django) and WebSockets."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlui.settings")

from django.core.asgi import get_asgi_application

# Build Django first: the routing below imports models.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.sessions import CookieMiddleware  # noqa: E402

from askuser_app.runtime.origins import SameOriginValidator  # noqa: E402
from askuser_app.runtime.proxies import SchemeFromProxies  # noqa: E402
from askuser_app.server import edge, routing  # noqa: E402
from askuser_app.server.startup import prepare_to_serve  # noqa: E402

# The proxy's scheme header is believed from a trusted proxy only (askuser_app/runtime/proxies.py).
application = SchemeFromProxies(
    ProtocolTypeRouter(
        {
            # Django's handler types receive and send with Mapping, the front door with dict.
            "http": edge.FrontDoor(URLRouter(routing.http_urlpatterns(django_asgi_app))),  # type: ignore[arg-type]
            # Cookies only: the consumer reads the login with the session it follows,
            # in one database call (askuser_app/web/socketauth.py).
            "websocket": SameOriginValidator(CookieMiddleware(URLRouter(routing.websocket_urlpatterns))),
        }
    )
)

# Loaded now, not by the first requests, and then kept out of the collector's passes.
prepare_to_serve()
