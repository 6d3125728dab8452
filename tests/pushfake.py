"""A Web Push service on 127.0.0.1 for the push tests (tests/delivery/test_push.py, and the real
push into chromium in tests/delivery/test_browser_push.py): https with a certificate made here,
trusted through ``SSL_CERT_FILE``; it records every push and answers as told. And the browser's side
of a subscription (``Browser``): its P-256 key pair and auth secret, which decrypt a push (aes128gcm,
with ``http_ece``) as a browser does."""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import json
import secrets
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import http_ece
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.servers import serve_in_thread

DEADLINE = 10
LOOPBACK = ipaddress.ip_address("127.0.0.1")
REBINDING = "push.rebinding.test"  # a name that answers a public address, then loopback


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# --- the browser's side: its key pair and auth secret -------------------------------------------


@dataclass
class Browser:
    """What a browser keeps for one subscription: an ECDH P-256 key pair and a 16-byte secret."""

    endpoint: str
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    auth: bytes = field(default_factory=lambda: secrets.token_bytes(16))

    def to_json(self) -> dict[str, Any]:
        """As ``PushSubscription.toJSON()`` gives it."""
        point = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": self.endpoint,
            "expirationTime": None,
            "keys": {"p256dh": b64url(point), "auth": b64url(self.auth)},
        }

    def plain(self, body: bytes) -> str:
        """Decrypt an aes128gcm push as the browser does: the text its service worker gets."""
        text: bytes = http_ece.decrypt(body, private_key=self.key, auth_secret=self.auth, version="aes128gcm")
        return text.decode()

    def read(self, body: bytes) -> dict[str, Any]:
        """Decrypt an aes128gcm push as the browser does, and parse it."""
        parsed: dict[str, Any] = json.loads(self.plain(body))
        return parsed


# --- the push service: https on 127.0.0.1 with a certificate made here ---------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class PushService:
    url: str = ""
    received: list[Received] = field(default_factory=list)
    # Each answer is popped in turn; when none is left, 201 Created.
    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    hold: threading.Event = field(default_factory=threading.Event)  # cleared: answers wait until set
    certificate: Path | None = None  # what a sender must trust (SSL_CERT_FILE), for https
    _changed: threading.Condition = field(default_factory=threading.Condition)

    # …or, for one endpoint only, these first.
    answers_at: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)

    def answer(self, status: int, headers: dict[str, str] | None = None, *, at: str = "") -> None:
        queue = self.answers_at.setdefault(f"/push/{at}", []) if at else self.answers
        queue.append((status, headers or {}))

    def endpoint(self, name: str) -> str:
        return f"{self.url}/push/{name}"

    def at(self, name: str) -> list[Received]:
        with self._changed:
            return [r for r in self.received if r.path == f"/push/{name}"]

    def wait_for(self, name: str, count: int = 1) -> list[Received]:
        with self._changed:
            done = self._changed.wait_for(lambda: len(self.at(name)) >= count, timeout=DEADLINE)
        assert done, f"expected {count} push(es) to {name}, got {len(self.at(name))}"
        return self.at(name)

    def _record(self, received: Received) -> tuple[int, dict[str, str]]:
        with self._changed:
            self.received.append(received)
            self._changed.notify_all()
            mine = self.answers_at.get(received.path)
            if mine:
                return mine.pop(0)
            return self.answers.pop(0) if self.answers else (201, {})


def certificate(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "push.test")])
    now = datetime.datetime.now(datetime.UTC)
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(LOOPBACK), x509.DNSName(REBINDING)]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "push.pem", folder / "push-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


def _handler(service: PushService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            status, headers = service._record(received)
            service.hold.wait(DEADLINE)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


@contextlib.contextmanager
def serving(context: ssl.SSLContext | None = None) -> Iterator[PushService]:
    """A push service on 127.0.0.1: https with ``context``, plain http without."""
    service = PushService()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(service))
    server.daemon_threads = True
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    service.url = f"{'https' if context else 'http'}://127.0.0.1:{server.server_address[1]}"
    service.hold.set()
    stop = serve_in_thread(server)
    try:
        yield service
    finally:
        service.hold.set()
        stop()


@contextlib.contextmanager
def https(folder: Path) -> Iterator[PushService]:
    """A push service on https://127.0.0.1, its certificate (``service.certificate``) made in ``folder``."""
    cert_file, key_file = certificate(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    with serving(context) as service:
        service.certificate = cert_file
        yield service
