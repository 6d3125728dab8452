"""A server process: the front door every HTTP request passes (``edge``), where each connection goes
(``routing``), ``/metrics`` (``metrics``), what follows every change of ``services`` (``effects``),
the deadline loop (``expiry``), start-up (``startup``) and the panel's answer on kept threads
(``keptthreads``). README.md in this folder lists every performance special case of the app,
wherever it lives, with the default it replaces, its figure, its guarding test and when it can go.

May import every other package: it is where the parts are put together.
"""
