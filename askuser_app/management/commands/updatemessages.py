"""``make messages``: gather every translatable string into the catalogues, then compile them.

The second half of adding or changing words (README "Languages"): after it,
fill in the new msgstr of askuser_app/locale/<language>/LC_MESSAGES/*.po and
run it again, which compiles the .mo files the server reads (committed, so
that running askuser needs no gettext)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

# Not the Control UI's strings: the virtualenv, the data folder, the tests, the
# benchmark, the docs and the vendored JavaScript (htmx).
IGNORED = [".venv", "var", "tests", "bench", "docs", "static/vendor", "controlui"]
DOMAINS = ("django", "djangojs")


def languages() -> list[str]:
    """The languages with a catalogue: all but English, the language the strings are written in."""
    return [code for code, _name in settings.LANGUAGES if code != "en"]


def make(**options: Any) -> None:
    """Run makemessages for both domains, with askuser's options (the CI check runs this too)."""
    for domain in DOMAINS:
        call_command(
            "makemessages",
            domain=domain,
            locale=languages(),
            ignore_patterns=IGNORED,
            add_location="file",
            no_obsolete=True,
            verbosity=0,
            **options,
        )


class Command(BaseCommand):
    help = "Update the translation catalogues from the code (makemessages), then compile them (compilemessages)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--compile-only", action="store_true", help="Only compile the catalogues.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["compile_only"]:
            make()
        call_command("compilemessages", locale=languages(), ignore_patterns=IGNORED, verbosity=0)
        self.stdout.write(f"Catalogues updated and compiled for {', '.join(languages())}.")
