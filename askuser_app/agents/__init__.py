"""The agent's side: the HTTP API (``api``, with the create served by ``create``), the bounded
long-polls (``waits``), coding agents' hooks (``hooks``, which park like the long-polls), the MCP tool
(``mcp_server``, built on the Python client, which is a package of its own: ``client/askuser_client``).

May import: ``delivery``, ``runtime``, ``domain`` and ``askuser_app.models``; not ``web`` or ``staff``.
"""
