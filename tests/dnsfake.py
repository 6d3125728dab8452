"""A DNS server on 127.0.0.1 for the delivery tests: it answers the names it was given and never
answers any other (a tarpit), so a test can point ``ASKUSER_DNS_SERVERS`` at it."""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading

TTL = 60


class FakeDNS:
    """Answers A queries for ``names`` (each name → its IPv4 addresses) with a TTL of a minute,
    AAAA queries for them with no address; never answers a query for any other name. A name in
    ``then`` is answered from there after its first answer (DNS rebinding)."""

    def __init__(self, names: dict[str, list[str]], then: dict[str, list[str]] | None = None) -> None:
        self.names, self.then = names, then or {}
        self.asked: list[str] = []  # the names of the A queries answered, in order
        self.unanswered = 0  # queries it kept silent on
        self.silent_for = threading.Event()  # a query for a name it does not know has come
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                query, peer = self.sock.recvfrom(4096)
            except OSError:  # closed
                return
            answer = self._answer(query)
            if answer is None:
                self.unanswered += 1
                self.silent_for.set()
            else:
                self.sock.sendto(answer, peer)

    def _answer(self, query: bytes) -> bytes | None:
        labels, at = [], 12
        while query[at]:
            labels.append(query[at + 1 : at + 1 + query[at]].decode().lower())
            at += 1 + query[at]
        qtype = struct.unpack("!H", query[at + 1 : at + 3])[0]
        question = query[12 : at + 5]
        name = ".".join(labels)
        addresses = self.names.get(name)
        if addresses is None:
            return None
        if qtype == 1:
            self.asked.append(name)
            self.names[name] = self.then.get(name, addresses)
        records = [ipaddress.IPv4Address(a).packed for a in addresses] if qtype == 1 else []
        header = query[:2] + struct.pack("!HHHHH", 0x8180, 1, len(records), 0, 0)
        answers = b"".join(struct.pack("!HHHIH", 0xC00C, 1, 1, TTL, 4) + packed for packed in records)
        return header + question + answers

    def close(self) -> None:
        self.sock.close()
