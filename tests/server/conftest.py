"""The server (askuser_app/server/): the front door, routing, start-up, the special serving
paths and their guards, deployment checks, the scaled mode's processes and the settings page."""

from __future__ import annotations
