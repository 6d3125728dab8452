"""The data folder (``ASKUSER_DATA_DIR``, default ``var/``) is private to the server's account.

It holds the SQLite database (everyone's questions and answers, and the
``django_session`` table whose keys log staff into ``/admin/``), the secret key
and the demo agent's token: another local account that can read one of them
can take over a login. So the folder is 0700 and the files in it 0600, whatever
the umask, and files made before this rule are tightened at startup.

Nothing is written when the settings are read: ``prepare`` makes the folder
and the keys kept in it when the app is ready (``apps.ready``, run by every
``django.setup()``: ``manage.py``, the ASGI application, the test suite),
before any database connection.

Plain Python, no Django: the settings use it before Django is set up.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

FOLDER_MODE = 0o700
FILE_MODE = 0o600
# SQLite makes these beside the database, with the database file's mode.
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def private_folder(path: Path) -> Path:
    """Create the folder 0700 (or make it so), with every file directly in it 0600."""
    path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    _chmod(path, FOLDER_MODE)
    for entry in path.iterdir():
        # Not through a link: it may point at something that is not ours to change.
        if entry.is_file() and not entry.is_symlink():
            tighten(entry)
    return path


def prepare(data_dir: Path) -> None:
    """At start-up: the folder, private, with the secret key and the folder ``collectstatic``
    writes to, each made once. What a notifier keeps here (Web Push's key) it makes itself, when
    the app is ready (``askuser_app/delivery/channels/__init__.py``)."""
    private_folder(data_dir)
    kept_secret(data_dir)
    (data_dir / "static").mkdir(mode=FOLDER_MODE, exist_ok=True)


def kept_secret(data_dir: Path) -> str:
    """A random key kept in the data folder, so logins survive restarts."""
    return _made_once(data_dir / "secret_key", lambda: secrets.token_urlsafe(50))


def vapid_key(data_dir: Path) -> str:
    """The Web Push signing key (P-256, PEM), made once: linked devices keep working across restarts
    (``askuser_app/delivery/channels/push/``)."""
    return _made_once(data_dir / "vapid_private_key.pem", _new_vapid_key)


def _new_vapid_key() -> str:
    from cryptography.hazmat.primitives import serialization  # only when a key is made, once per data folder
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem.decode()


def _made_once(path: Path, make: Callable[[], str]) -> str:
    """The file's text, written first if it is missing; linked into place, never overwritten,
    so that two processes starting at once agree on one value."""
    if not path.exists():
        private_folder(path.parent)
        draft = path.with_name(f".{path.name}-{secrets.token_hex(8)}")
        write_private(draft, make())
        with contextlib.suppress(FileExistsError):
            os.link(draft, path)
        draft.unlink()
    return path.read_text().strip()


def tighten(path: Path) -> None:
    _chmod(path, FILE_MODE)


def _chmod(path: Path, mode: int) -> None:
    # A -wal or -shm goes away when the last connection closes; what another
    # account owns (a tool started as someone else reading the settings) is
    # theirs to protect.
    with contextlib.suppress(FileNotFoundError, PermissionError):
        path.chmod(mode)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file that is 0600 from its first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w") as file:
        os.fchmod(fd, FILE_MODE)  # an older file keeps its mode through O_CREAT
        file.write(text)


def protect_sqlite_files(sender: Any, connection: Any, **kwargs: Any) -> None:
    """``connection_created``: SQLite makes a new database 0644 (less the umask) and its
    -wal and -shm files like it; make them 0600 as soon as they exist."""
    name = str(connection.settings_dict["NAME"])
    if connection.vendor != "sqlite" or name == ":memory:" or name.startswith("file:"):
        return
    for suffix in SQLITE_SUFFIXES:
        candidate = Path(name + suffix)
        if candidate.exists():
            tighten(candidate)


# --- the server's address, remembered for the commands that talk to it ----------

SERVER_URL_FILE = "server-url"
DEFAULT_URL = "http://127.0.0.1:8000"


def default_server_url(data_dir: Path) -> str:
    """``$ASKUSER_URL``, else the URL ``setupdemo --url`` (``make run``) remembered, else the default."""
    if url := os.environ.get("ASKUSER_URL", "").strip():
        return url
    try:
        return (data_dir / SERVER_URL_FILE).read_text().strip() or DEFAULT_URL
    except FileNotFoundError:
        return DEFAULT_URL
