"""The person's side, in the browser: the Control UI's pages and forms (``views``), what they show
(``ui``, one renderer for the page, the htmx response and the push), the live socket
(``consumers``, ``socketauth``, ``origins``), logins (``sessions``) and the response headers
(``middleware``).

May import: ``delivery``, ``runtime``, ``domain`` and ``askuser_app.models``; not ``agents`` or ``staff``.
"""
