"""Staff review in Django admin: the history of every prompt (``admin``) and what is read for it:
the detail, the CSV export and the dashboard (``history``).

May import: ``delivery``, ``runtime``, ``domain`` and ``askuser_app.models``; not ``agents`` or ``web``.
"""
