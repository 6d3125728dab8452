"""Web Push: encrypting and sending a push to a person's devices (``adapter``), and subscribing,
testing and removing devices, with the settings page's section for them (``views``, ``urls``,
``templates/``)."""

from __future__ import annotations

from askuser_app.delivery.notifiers import Folder

folder = Folder(section=1)
