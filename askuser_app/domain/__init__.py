"""What askuser is, whoever asks and wherever the answer comes from.

The agent contract (``contract``: the tool schema, validation and the result
shape), the only code that changes a prompt's state (``services``), the words
for outcomes and surfaces (``wording``), plain-text replies (``textreply``), coding agents' hook events (``hooks``),
agent tokens (``agentauth``), a person's preferences (``prefs``) and what follows
each change (``effects``), declared here and done by the assembled server.

May import: ``askuser_app.models`` and Django. Imports no other package of the
app: the parts that act on a change (delivery, the live pages, the waits) are
reached through the ``effects.Effects`` that ``server/effects.py`` implements.
"""
