"""A server process: the front door every HTTP request passes (``edge``), where each connection goes
(``routing``), the deadline loop (``expiry``), start-up (``startup``) and the performance special
cases, each with its figure (README.md in this folder).

May import every other package: it is where the parts are put together.
"""
