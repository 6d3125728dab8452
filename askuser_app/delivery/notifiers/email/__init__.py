"""Email: the mail for an unanswered prompt (``adapter``, ``mails``), its signed one-tap answer links
and the settings page's email section (``views``, ``urls``, ``templates/``), and the file backend that
keeps mail on disk when no SMTP server is set (``backend``)."""

from __future__ import annotations

from askuser_app.delivery.notifiers import Folder

folder = Folder(section=2)
