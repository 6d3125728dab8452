"""The runtime (askuser_app/runtime/): the database calls, background loops, caches,
channel layers, the data folder and who a request comes from."""

from __future__ import annotations
