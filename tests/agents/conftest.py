"""The agent's side (askuser_app/agents/): the HTTP API, the waits, hooks, MCP and the Python
client, reached through the ASGI application production serves (tests/conftest.py's
``api`` and ``asgi_request``) or a live Daphne (tests/servers.py)."""

from __future__ import annotations
