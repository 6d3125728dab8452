"""Each channel folder's ``templates/``, found as the project's own templates are: the settings
name this loader rather than the folders, so that they import nothing of the app."""

from __future__ import annotations

from pathlib import Path

from django.template.loaders.filesystem import Loader as FilesystemLoader

from askuser_app.delivery import channels


class Loader(FilesystemLoader):
    def get_dirs(self) -> list[Path]:  # type: ignore[override]
        return channels.template_dirs()
