"""The embedded mail backend: each mail a file in the data folder's ``mail/``, private to the server.

Without ``EMAIL_HOST`` nothing leaves the machine, yet ``make run`` shows every
mail it would send. Django's file backend makes its folder and files with the
umask's modes; a mail's one-tap links answer prompts without a login, so here
the folder is 0700 and each file 0600 from its first byte, like the rest of
the data folder (``askuser_app/runtime/datadir.py``).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.mail.backends import filebased
from django.utils import timezone

from askuser_app.runtime.datadir import FILE_MODE, FOLDER_MODE


class EmailBackend(filebased.EmailBackend):
    """Django's file backend, with one private file per connection (one mail, as askuser sends them)."""

    def __init__(self, *args: Any, file_path: str | None = None, **kwargs: Any) -> None:
        folder = Path(file_path or settings.EMAIL_FILE_PATH)
        folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        folder.chmod(FOLDER_MODE)  # made before this rule, or by Django's own file backend
        super().__init__(*args, file_path=str(folder), **kwargs)

    def open(self) -> bool:
        if self.stream is not None:
            return False
        name = f"{timezone.now():%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:12]}.eml"
        fd = os.open(Path(self.file_path) / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        os.fchmod(fd, FILE_MODE)
        self.stream = os.fdopen(fd, "wb")
        return True
