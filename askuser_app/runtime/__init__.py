"""What every part of a server process runs on.

Database calls off the event loop (``asyncdb``), background loops
(``background``), the channel layer and the realtime hub that waits and pages
park on (``layers``, ``realtime``), what the process counts for ``/metrics``
(``metrics``), the cache (``caching``, ``cachepool``), a person's language
(``i18n``), the data folder (``datadir``) and the raw ASGI pieces the routes
in front of Django share (``asgi``).

May import: ``domain``, ``askuser_app.models`` and the frameworks.
"""
