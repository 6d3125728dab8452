"""The data folder (``ASKUSER_DATA_DIR``, default ``var/``) is private to the server's account.

It holds the SQLite database (everyone's questions and answers, and the
``django_session`` table whose keys log staff into ``/admin/``), the secret key
and the demo agent's token: another local account that can read one of them
can take over a login. So the folder is 0700 and the files in it 0600, whatever
the umask, and files made before this rule are tightened at startup.

Plain Python, no Django: the settings use it before Django is set up.
"""

from __future__ import annotations

import contextlib
import os
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
