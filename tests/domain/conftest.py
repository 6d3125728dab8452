"""The domain (askuser_app/domain/): the contract's validation, every transition and its races,
the wording, plain-text replies, more time. Tests here call the domain or reach it through
the app production serves; the shared users, agents and API client are in tests/conftest.py."""

from __future__ import annotations
