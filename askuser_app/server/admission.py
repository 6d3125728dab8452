"""New connections let in a few per turn of the event loop; the rest wait in the kernel.

Twisted accepts every connection queued on the listening socket at once (a
hundred and more per call when many arrive), and in the next turn of the event
loop reads and parses the first request of each: for a page's socket, Twisted's
HTTP parsing, Daphne's upgrade, autobahn's handshake and the application's
start, about a millisecond each. After a restart, thousands of pages coming
back made turns of hundreds of milliseconds, and a ``/healthz`` or an agent's
request on a connection already open waited for whole turns
(docs/PERFORMANCE.md, "The reconnect storm's trivial request").

Here a turn lets in at most ``ASKUSER_NEW_CONNECTIONS_PER_TURN`` new
connections. One accepted beyond that is paused before anything of it is read
(its request stays in the kernel's socket buffer), the listening sockets stop
being read (further connections wait in the kernel's backlog), and each later
turn lets in as many more, oldest first, until none wait; then the listening
sockets are read again. A connection already open is never held, and each
request is still served on the one event loop, ``/healthz`` included.

Only public interfaces: Daphne's ``Server`` (its ``listen_success`` hands over
each listening port, ``http_factory`` is the factory it listens with), the
factory's ``protocol`` (what Twisted's ``buildProtocol`` calls), the
transport's ``pauseProducing``/``resumeProducing`` and the port's
``stopReading``/``startReading``. server/README.md has its row.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from daphne.server import Server as DaphneServer
from twisted.internet.interfaces import IProtocol
from twisted.python.components import proxyForInterface

from askuser_app.runtime import metrics


class Admission:
    """How many new connections each turn of the event loop reads, and those waiting for a turn."""

    def __init__(self, per_turn: int) -> None:
        self.per_turn = per_turn
        self.let_in = 0  # new connections let in since the last turn began
        self.waiting: deque[Any] = deque()  # their transports, paused, oldest first
        self.ports: list[Any] = []
        self.ports_paused = False
        self.turn_ahead = False

    def guard(self, port: Any, factory: Any) -> None:
        """Hold back what ``port`` accepts for ``factory`` beyond each turn's share."""
        self.ports.append(port)
        if not isinstance(factory.__dict__.get("protocol"), Admitting):
            factory.protocol = Admitting(factory.protocol, self)

    def arrived(self, transport: Any) -> None:
        """A connection just accepted: let in now, or paused until a later turn."""
        if not self.waiting and self.let_in < self.per_turn:
            self.let_in += 1
        else:
            transport.pauseProducing()
            self.waiting.append(transport)
            metrics.CONNECTIONS_HELD.inc()
            if not self.ports_paused:
                self.ports_paused = True
                for port in self.ports:
                    port.stopReading()
        self.next_turn()

    def next_turn(self) -> None:
        # Called soon: it runs at the start of the next turn, before what that turn reads.
        if not self.turn_ahead:
            self.turn_ahead = True
            asyncio.get_running_loop().call_soon(self.turn)

    def turn(self) -> None:
        """A new turn: let in the next of those waiting; once none wait, accept again."""
        self.turn_ahead = False
        self.let_in = 0
        while self.waiting and self.let_in < self.per_turn:
            transport = self.waiting.popleft()
            if transport.connected and not transport.disconnecting:
                transport.resumeProducing()
                self.let_in += 1
        if not self.waiting and self.ports_paused:
            self.ports_paused = False
            for port in self.ports:
                port.startReading()
        if self.let_in:  # so that the turn after this one starts its count anew
            self.next_turn()


class Admitting:
    """The factory's ``protocol``: each connection's protocol, told to the gate when it connects."""

    def __init__(self, build: Any, admission: Admission) -> None:
        self.build, self.admission = build, admission

    def __call__(self) -> Admitted:
        return Admitted(self.build(), self.admission)


class Admitted(proxyForInterface(IProtocol, "protocol")):  # type: ignore[misc]
    """The protocol Daphne's factory built (Twisted's HTTP channel), unchanged but for its
    connection being handed to the gate. What the factory sets on it (its ``factory``,
    ``requestFactory``, ``timeOut``) is set on the channel; Daphne's upgrade to a socket
    replaces it on the transport with autobahn's protocol."""

    def __init__(self, protocol: Any, admission: Admission) -> None:
        self.__dict__.update(protocol=protocol, admission=admission)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["protocol"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["protocol"], name, value)

    def makeConnection(self, transport: Any) -> None:
        self.__dict__["protocol"].makeConnection(transport)
        self.__dict__["admission"].arrived(transport)


class Server(DaphneServer):  # type: ignore[misc]
    """Daphne's server, with each listening port's new connections let in a few per turn."""

    def __init__(self, *args: Any, per_turn: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.admission = Admission(per_turn) if per_turn > 0 else None

    def listen_success(self, port: Any) -> None:
        super().listen_success(port)
        if self.admission is not None:
            self.admission.guard(port, self.http_factory)
