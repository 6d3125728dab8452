"""What a server process does once, before it serves its first request.

Django loads much on first use: the URLconf and the views it imports, each
template and its tag libraries, each language's catalogue, the cache backend;
the chat surfaces import their platforms' SDKs. Left to the first requests,
that is about 490 modules imported while an agent or a person waits for the
answer, and about 50,000 objects that Python's collector then walks on every
full pass for as long as the process lives.

So the server loads them before it listens, and then freezes everything
loaded so far (``gc.freeze``): objects that live as long as the process are
never walked again. Under a load of creates, a full pass took 86–113 ms
before and 10–12 ms after, on the machine of docs/PERFORMANCE.md ("The
collector"); the first create after a start, 310–320 ms before (the imports)
and 20 ms after. ``tests/server/test_startup.py`` checks that a create, a page, its
socket, an answer and the agent's wait import nothing new.
"""

from __future__ import annotations

import gc
from importlib import import_module
from pathlib import Path

from django.conf import settings
from django.core.cache import caches
from django.db import connections
from django.template import Engine, engines
from django.template.backends.django import DjangoTemplates
from django.template.loader import get_template
from django.utils import formats, translation
from django.utils.module_loading import import_string

from askuser_app.delivery import channels

# Python considers a full pass after 10 passes over the middle generation
# (each after 10 over the youngest, each after 700 objects allocated): every
# 70,000 objects kept; it runs one when the old objects grew by a quarter
# since the last. With what was loaded frozen, a quarter of what is left is
# little, so while thousands of pages opened their sockets (a restart) every
# 70,000 objects brought a full pass over all of them: 11 passes of up to
# 290 ms while 2,000 pages came back, 12–41 of up to 1.4 s with 5,000, on the
# machine of docs/PERFORMANCE.md ("The collector"). After 100 middle passes
# (700,000 objects): 2, and 2–7. The sockets' memory stayed the same (36 KiB
# each with 5,000 open).
FULL_PASS_AFTER_MIDDLE_PASSES = 100


def prepare_to_serve() -> None:
    """Load what requests would load on first use, then keep it out of the collector's passes."""
    load_what_requests_use()
    # Collected first: garbage frozen now would stay for good.
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_PASS_AFTER_MIDDLE_PASSES)


def load_what_requests_use() -> None:
    import_module(settings.ROOT_URLCONF)
    channels.installed()  # every chat surface and notifier, and their SDKs
    import_module("sniffio")  # what httpcore imports on an outbound request's first lock
    for alias in connections:
        import_module(connections[alias].ops.compiler_module)  # the ORM's SQL compilers
    for alias in settings.CACHES:
        caches[alias]
    for layer in settings.CHANNEL_LAYERS.values():
        import_string(layer["BACKEND"])
    for name in (settings.SESSION_SERIALIZER, settings.MESSAGE_STORAGE):
        import_string(name)
    for engine in django_engines():
        for name in engine.context_processors:
            import_string(name)
        for name in project_templates(engine):
            get_template(name)
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            translation.gettext("")  # the catalogue, merged from every app's
            formats.get_format("DATETIME_FORMAT")  # and the language's formats


TEMPLATE_SUFFIXES = (".html", ".txt", ".svg")


def django_engines() -> list[Engine]:
    return [backend.engine for backend in engines.all() if isinstance(backend, DjangoTemplates)]


def project_templates(engine: Engine) -> list[str]:
    """The names of the project's own templates (``templates/``, and each notifier folder's), as views ask for them."""
    names = []
    for folder in engine.dirs:
        root = Path(folder)
        names += [str(path.relative_to(root)) for path in sorted(root.rglob("*")) if path.suffix in TEMPLATE_SUFFIXES]
    return names
