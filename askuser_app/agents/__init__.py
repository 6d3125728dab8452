"""The agent's side: the HTTP API (``api``, with the create served by ``create``), the bounded
long-polls (``waits``), coding agents' hooks (``hooks``, which park like the long-polls), the MCP tool
(``mcp_server``) and the Python client (``client``, which imports nothing from Django and may be
copied on its own).

May import: ``delivery``, ``runtime``, ``domain`` and ``askuser_app.models``; not ``web`` or ``staff``.
"""
