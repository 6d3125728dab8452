"""Settings for askuser, read from the environment.

With nothing set, the server runs on SQLite (WAL) and the in-memory channel
layer, keeping its data under ``var/``. ``DATABASE_URL`` switches to
PostgreSQL and ``REDIS_URL`` to the Redis channel layer (the scaled mode).
"""

from __future__ import annotations

import ipaddress
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.functional import lazy

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    value = env_str(name)
    if not value:
        return default
    return value.lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    value = env_str(name)
    return int(value) if value else default


def env_float(name: str, default: float) -> float:
    value = env_str(name)
    return float(value) if value else default


def env_networks(name: str) -> list[str]:
    """Comma-separated addresses or networks (``10.0.0.1,fd00::/8``), each checked here."""
    networks = []
    for entry in env_list(name, ""):
        try:
            networks.append(str(ipaddress.ip_network(entry, strict=False)))
        except ValueError:
            example = "an address or a network such as 10.0.0.0/8"
            raise ImproperlyConfigured(f"{name}: {entry!r} is not {example}.") from None
    return networks


# 0700, its files 0600: it holds the database, the secret key and tokens. Made, with
# the keys kept in it, when the app is ready (askuser_app/runtime/datadir.py), not here:
# these settings only read it, and import nothing of the app (a contract in pyproject.toml).
DATA_DIR = Path(env_str("ASKUSER_DATA_DIR") or BASE_DIR / "var")


def kept_secret() -> str:
    """The secret key the app keeps in the data folder, made once when it is ready (before any
    request or database connection can need it)."""
    try:
        return (DATA_DIR / "secret_key").read_text().strip()
    except FileNotFoundError:
        raise ImproperlyConfigured(
            f"No secret key in {DATA_DIR} yet: askuser makes one when it starts (django.setup()), or set SECRET_KEY."
        ) from None


def remembered_server_url() -> str:
    """``ASKUSER_URL``, else the address ``make run`` (``setupdemo --url``) remembered in the data
    folder, else http://127.0.0.1:8000: the commands' own default (askuser_app/runtime/datadir.py)."""
    if url := env_str("ASKUSER_URL"):
        return url
    try:
        return (DATA_DIR / "server-url").read_text().strip() or "http://127.0.0.1:8000"
    except FileNotFoundError:
        return "http://127.0.0.1:8000"


# Read from the data folder when first used.
SECRET_KEY = env_str("SECRET_KEY") or lazy(kept_secret, str)()
DEBUG = env_bool("DEBUG")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",  # first, so that runserver serves the ASGI application
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "ninja",
    "askuser_app",
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # After the session, before CommonMiddleware: the browser's language (cookie, Accept-Language).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Once the person is known: the language they chose wins over the browser's.
    "askuser_app.runtime.i18n.PersonLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "askuser_app.web.middleware.SecurityHeadersMiddleware",
    # Last, as django-axes asks: it turns a refused login into the locked-out page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "controlui.urls"
ASGI_APPLICATION = "controlui.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            # The project's templates, then each channel folder's (askuser_app/delivery/channels/),
            # then the apps'. Named, not listed: the folders are found when the app runs.
            "loaders": [
                (
                    "django.template.loaders.cached.Loader",
                    [
                        "django.template.loaders.filesystem.Loader",
                        "askuser_app.delivery.channels.loader.Loader",
                        "django.template.loaders.app_directories.Loader",
                    ],
                )
            ],
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "askuser_app.web.context_processors.waiting",
            ],
        },
    },
]


SQLITE_OPTIONS = {
    # Writers take the lock when the transaction starts, so a read-then-write
    # transaction never fails half-way with "database is locked"; a writer
    # finding it taken waits up to ``timeout`` seconds for it.
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}


def database_config() -> dict[str, Any]:
    url = env_str("DATABASE_URL")
    config: dict[str, Any] = {**dj_database_url.parse(url)} if url else {"NAME": DATA_DIR / "db.sqlite3"}
    if config.get("ENGINE", "django.db.backends.sqlite3") == "django.db.backends.sqlite3":
        name = Path(config["NAME"])
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name,
            "OPTIONS": SQLITE_OPTIONS,
            # Kept open on the threads that outlive a request: Channels' database
            # thread (creates, long-polls, sockets). A request Django serves
            # has a thread of its own, whose connection goes with it.
            "CONN_MAX_AGE": None,
            # A file, so that server processes started by the tests share it.
            "TEST": {"NAME": name.with_name(f"test-{name.name}")},
        }
    if config["ENGINE"] == "django.db.backends.postgresql":
        # A pool instead of persistent connections: under ASGI every request
        # has its own thread, so per-thread connections would pile up.
        size = env_int("DATABASE_POOL_SIZE", 20)
        config["OPTIONS"] = {"pool": {"min_size": 2, "max_size": size, "timeout": 10}}
        config["CONN_MAX_AGE"] = 0
    return config


DATABASES = {"default": database_config()}
# Threads that do the database work of the agent routes served in front of Django
# (askuser_app/agents/calls.py: the create, the waits' reads, the hooks), each with
# its kept connection; at least one. SQLite lets one connection write at a time: one
# thread queues a process's creates for the lock instead of racing for it.
ASKUSER_CREATE_THREADS = max(
    1, env_int("ASKUSER_CREATE_THREADS", 1 if DATABASES["default"]["ENGINE"].endswith("sqlite3") else 8)
)
# Threads that serve the panel's answers through Django (askuser_app/server/keptthreads.py),
# each with its kept connection; at least one; one on SQLite, for the same reason as creates.
ASKUSER_ANSWER_THREADS = max(
    1, env_int("ASKUSER_ANSWER_THREADS", 1 if DATABASES["default"]["ENGINE"].endswith("sqlite3") else 4)
)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


# The scaled mode's Redis, for the channel layer and the cache, under one prefix.
REDIS_URL = env_str("REDIS_URL")
REDIS_PREFIX = env_str("ASKUSER_REDIS_PREFIX", "askuser")
# Whether `manage.py serve` also runs the worker's loops (chat apps' events fetched by
# polling, which one process of a deployment runs): by default the embedded mode's one
# process does; the scaled mode's server processes leave them to `manage.py worker`.
ASKUSER_SERVE_WORKER = env_bool("ASKUSER_SERVE_WORKER", not REDIS_URL)


def channel_layer_config() -> dict[str, Any]:
    if REDIS_URL:
        return {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": REDIS_PREFIX},
        }
    return {"BACKEND": "askuser_app.runtime.layers.InMemoryChannelLayer"}


CHANNEL_LAYERS = {"default": channel_layer_config()}


def cache_config() -> dict[str, Any]:
    """Where logins (``SESSION_ENGINE``) and whom the notifiers reach are kept
    besides the database: this process's memory in the embedded mode, which
    runs one process; Redis in the scaled mode, so that a logout in one process
    ends the login in every other."""
    if REDIS_URL:
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": REDIS_PREFIX,
            # One pool per process, not one per request (askuser_app/runtime/cachepool.py);
            # a Redis that does not answer within a second is a miss (askuser_app/runtime/caching.py).
            "OPTIONS": {
                "pool_class": "askuser_app.runtime.cachepool.SharedConnectionPool",
                "socket_connect_timeout": 1,
                "socket_timeout": 1,
            },
        }
    return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}


CACHES = {"default": cache_config()}
# A login is read from the cache, and from the database only when the cache
# lacks it: a socket opening its page, and every page, skip one query
# (docs/PERFORMANCE.md, "Sockets").
SESSION_ENGINE = "askuser_app.web.sessions"  # cached_db, with the cache a shortcut only

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The Control UI's languages (README "Languages"): a person's choice, else the
# browser's Accept-Language, else English. Catalogues in askuser_app/locale/.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("hi", "हिन्दी")]
LOCALE_PATHS = [BASE_DIR / "askuser_app" / "locale"]
LANGUAGE_COOKIE_NAME = "askuser_language"
LANGUAGE_COOKIE_AGE = 365 * 24 * 60 * 60
LANGUAGE_COOKIE_SAMESITE = "Lax"
LANGUAGE_COOKIE_HTTPONLY = True
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Where ``manage.py collectstatic`` gathers the static files for a proxy to serve
# (deploy/nginx/askuser.conf): outside the private data folder, which it cannot read.
STATIC_ROOT = Path(env_str("ASKUSER_STATIC_ROOT") or DATA_DIR / "static")
# Served from the source folders too, so the server runs without collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- security ---------------------------------------------------------------
# Cookies are HttpOnly and SameSite=Lax everywhere; behind TLS (ASKUSER_HTTPS=1)
# they are Secure too, plain HTTP is redirected and HSTS is sent. The CSRF
# token reaches htmx through the page, so its cookie need not be readable.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if env_bool("ASKUSER_HTTPS"):
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = LANGUAGE_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("ASKUSER_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("ASKUSER_HSTS_PRELOAD", True)

# Prompts an agent may create per minute (0: no limit); 429 with Retry-After beyond.
ASKUSER_RATE_LIMIT = env_int("ASKUSER_RATE_LIMIT", 120)
# Chat messages an agent may post per minute (0: no limit); 429 with Retry-After beyond.
ASKUSER_MESSAGE_RATE_LIMIT = env_int("ASKUSER_MESSAGE_RATE_LIMIT", 120)
# Live-update sockets one user, and one client address, may hold open in one
# process (0: no cap); beyond, the socket is closed with code 4429.
ASKUSER_MAX_SOCKETS_PER_USER = env_int("ASKUSER_MAX_SOCKETS_PER_USER", 200)
ASKUSER_MAX_SOCKETS_PER_ADDRESS = env_int("ASKUSER_MAX_SOCKETS_PER_ADDRESS", 1000)
# A socket whose login is not read within this many seconds (behind other
# pages' reads, as after a restart) completes its handshake first and is
# refused, if it must be, with a close code.
ASKUSER_SOCKET_HOLD_AFTER = env_float("ASKUSER_SOCKET_HOLD_AFTER", 1.0)
# New connections whose first request a turn of the event loop reads; those
# beyond wait, unread, for the next turns (askuser_app/server/admission.py). 0: no cap.
ASKUSER_NEW_CONNECTIONS_PER_TURN = env_int("ASKUSER_NEW_CONNECTIONS_PER_TURN", 4)
# Any request body larger than this is refused with 413 before it is read.
ASKUSER_MAX_BODY = env_int("ASKUSER_MAX_BODY", 1024 * 1024)
# Waits (prompt results and messages) one agent, one owner across their agents,
# and one client address may hold parked at once in a process (0: no cap);
# 429 with Retry-After beyond. An agent has one pending prompt per session.
ASKUSER_MAX_WAITS_PER_AGENT = env_int("ASKUSER_MAX_WAITS_PER_AGENT", 100)
ASKUSER_MAX_WAITS_PER_USER = env_int("ASKUSER_MAX_WAITS_PER_USER", 500)
ASKUSER_MAX_WAITS_PER_ADDRESS = env_int("ASKUSER_MAX_WAITS_PER_ADDRESS", 500)
# The proxies in front of askuser (addresses or networks): a request from one of
# them is from the rightmost X-Forwarded-For entry that is not one of them
# (askuser_app/runtime/proxies.py). Empty: the peer is the client.
ASKUSER_TRUSTED_PROXIES = env_networks("ASKUSER_TRUSTED_PROXIES")
# /metrics is served to loopback clients, and to any client that sends this as a
# Bearer token (askuser_app/server/metrics.py). Empty: loopback only.
ASKUSER_METRICS_TOKEN = env_str("ASKUSER_METRICS_TOKEN")
# manage.py worker serves no HTTP; with a port it serves its own counters' /metrics there
# (askuser_app/server/metrics.py, WorkerMetrics), under the same rule. 0: not served.
ASKUSER_WORKER_METRICS_PORT = env_int("ASKUSER_WORKER_METRICS_PORT", 0)
ASKUSER_WORKER_METRICS_HOST = env_str("ASKUSER_WORKER_METRICS_HOST", "127.0.0.1")

# Login throttling (django-axes) on the Control UI's and the admin's login:
# after ASKUSER_LOGIN_FAILURES wrong passwords for one username from one
# address, that pair is locked out for ASKUSER_LOGIN_COOLOFF_MINUTES, even with
# the right password; other users and other addresses are not. A success
# clears the count. Second tier (askuser_app/web/logins.py): after
# ASKUSER_LOGIN_FAILURES_PER_USERNAME wrong passwords for one username within
# an hour, from any addresses, that username is locked out from everywhere for
# the cool-off (0: no such tier). `manage.py axes_reset` lifts every lockout.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# At least 1 each: axes reads a zero cool-off as "locked until an admin resets it".
AXES_FAILURE_LIMIT = max(1, env_int("ASKUSER_LOGIN_FAILURES", 5))
AXES_COOLOFF_TIME = timedelta(minutes=max(1, env_int("ASKUSER_LOGIN_COOLOFF_MINUTES", 15)))
ASKUSER_LOGIN_FAILURES_PER_USERNAME = max(0, env_int("ASKUSER_LOGIN_FAILURES_PER_USERNAME", 50))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "askuser_app.runtime.proxies.for_request"
AXES_HANDLER = "askuser_app.web.logins.LoginHandler"
# The username tier counts axes' failure log, one row per password checked
# and found wrong: an attempt refused during a lockout checks no password, so
# it is neither logged nor stretches the lockout (which ends the cool-off
# after the failure that started it). The handler keeps the log to its last
# hour; the per-username bound stays above anything that hour can hold
# (axes trims beyond it newest first).
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_ACCESS_FAILURE_LOG_PER_USER_LIMIT = 1000 + 2 * ASKUSER_LOGIN_FAILURES_PER_USERNAME
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "askuser_app.web.views.locked_out"
AXES_DISABLE_ACCESS_LOG = True  # successful logins are not history worth a table
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# Webhooks: attempts per delivery, the first retry's delay (doubling after), seconds per attempt.
ASKUSER_WEBHOOK_ATTEMPTS = env_int("ASKUSER_WEBHOOK_ATTEMPTS", 10)
ASKUSER_WEBHOOK_RETRY_BASE = env_float("ASKUSER_WEBHOOK_RETRY_BASE", 5)
ASKUSER_WEBHOOK_TIMEOUT = env_float("ASKUSER_WEBHOOK_TIMEOUT", 10)
# Seconds a webhook or a push may take to connect (TCP and TLS), apart from the time its answer
# may take, so that a host that never accepts is given up on (and paused) early.
ASKUSER_CONNECT_TIMEOUT = env_float("ASKUSER_CONNECT_TIMEOUT", 5.0)
# The DNS servers deliveries resolve host names with (10.0.0.2,127.0.0.1:5353); none: /etc/resolv.conf.
ASKUSER_DNS_SERVERS = env_list("ASKUSER_DNS_SERVERS", "")
# Webhooks go to public addresses only, unless allowed: all (for agents running
# next to the server), or some host names and networks (host1,10.0.0.0/8).
ASKUSER_WEBHOOK_ALLOW_PRIVATE = env_bool("ASKUSER_WEBHOOK_ALLOW_PRIVATE")
ASKUSER_WEBHOOK_ALLOW_HOSTS = env_list("ASKUSER_WEBHOOK_ALLOW_HOSTS", "")
# Seconds between MCP progress notifications while ask_user waits.
ASKUSER_MCP_PROGRESS_EVERY = env_float("ASKUSER_MCP_PROGRESS_EVERY", 10)
# Seconds without activity after which a session with nothing pending leaves the sessions list.
ASKUSER_SESSION_IDLE_HIDE = env_int("ASKUSER_SESSION_IDLE_HIDE", 24 * 60 * 60)

# Chat apps (README "Chat apps"): a channel whose variables are unset is off.
TELEGRAM_BOT_TOKEN = env_str("TELEGRAM_BOT_TOKEN")
TELEGRAM_WEBHOOK_SECRET = env_str("TELEGRAM_WEBHOOK_SECRET")
TELEGRAM_API_URL = env_str("TELEGRAM_API_URL", "https://api.telegram.org").rstrip("/")
SLACK_BOT_TOKEN = env_str("SLACK_BOT_TOKEN")
SLACK_SIGNING_SECRET = env_str("SLACK_SIGNING_SECRET")
SLACK_API_URL = env_str("SLACK_API_URL", "https://slack.com/api/")
SLACK_APP_TOKEN = env_str("SLACK_APP_TOKEN")  # Socket Mode, for a server without a public URL
DISCORD_APPLICATION_ID = env_str("DISCORD_APPLICATION_ID")
DISCORD_PUBLIC_KEY = env_str("DISCORD_PUBLIC_KEY")
DISCORD_BOT_TOKEN = env_str("DISCORD_BOT_TOKEN")
DISCORD_API_URL = env_str("DISCORD_API_URL", "https://discord.com/api/v10").rstrip("/")
# The absolute address of this server, for the links in chat messages; by default
# the address `make run` (setupdemo --url) remembered, else http://127.0.0.1:8000.
ASKUSER_PUBLIC_URL = (env_str("ASKUSER_PUBLIC_URL") or remembered_server_url()).rstrip("/")
# Chat sends and edits: tries per step, the first retry's delay in seconds (doubling after).
# Mail (README "Email"): EMAIL_HOST sends through that SMTP server (and emails unanswered
# prompts after two minutes by default); without it, each mail is written to a file in the
# data folder's mail/ instead (0600, like the rest of it: a mail's links answer prompts).
EMAIL_HOST = env_str("EMAIL_HOST")
ASKUSER_EMAIL_SMTP = bool(EMAIL_HOST)
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS")  # STARTTLS, usually port 587
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL")  # implicit TLS, usually port 465
EMAIL_TIMEOUT = env_float("EMAIL_TIMEOUT", 20)  # seconds per SMTP operation
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "askuser <askuser@localhost>")
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("Set EMAIL_USE_TLS or EMAIL_USE_SSL, not both.")
if ASKUSER_EMAIL_SMTP:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
else:
    EMAIL_BACKEND = "askuser_app.delivery.channels.email.backend.EmailBackend"
EMAIL_FILE_PATH = DATA_DIR / "mail"

# Web Push (README "Web Push"): the VAPID key pair that signs each push, made once and
# kept in the data folder like the secret key, unless given (private key as PEM or as
# the base64url key `vapid --gen` and web-push tools print). ASKUSER_PUSH=0 turns it off.
ASKUSER_PUSH = env_bool("ASKUSER_PUSH", True)
# Unset: the key made once in the data folder (askuser_app/delivery/channels/push/adapter.py).
ASKUSER_VAPID_PRIVATE_KEY = env_str("ASKUSER_VAPID_PRIVATE_KEY").replace("\\n", "\n")
ASKUSER_VAPID_PUBLIC_KEY = env_str("ASKUSER_VAPID_PUBLIC_KEY")  # derived from the private key when unset
# Who push services may contact about our pushes; unset, mailto:askuser@ the public URL's host.
ASKUSER_VAPID_SUBJECT = env_str("ASKUSER_VAPID_SUBJECT")
# Push services are public; an endpoint on a private address is refused unless allowed (tests).
ASKUSER_PUSH_ALLOW_PRIVATE = env_bool("ASKUSER_PUSH_ALLOW_PRIVATE")
# Devices one person may link for Web Push (0: no cap); each new prompt is one push per device.
ASKUSER_MAX_PUSH_DEVICES = env_int("ASKUSER_MAX_PUSH_DEVICES", 10)
# Seconds a new prompt waits before it is pushed, unless the person chose otherwise (0: at once);
# the push is skipped if the prompt was resolved meanwhile or one of the person's tabs is in sight.
ASKUSER_PUSH_GRACE = env_float("ASKUSER_PUSH_GRACE", 20)

# "I need more time": each extension adds ASKUSER_EXTEND_SECONDS, at most
# ASKUSER_EXTEND_TIMES times, never past ASKUSER_EXTEND_LIMIT_SECONDS after creation.
ASKUSER_EXTEND_SECONDS = env_int("ASKUSER_EXTEND_SECONDS", 15 * 60)
ASKUSER_EXTEND_TIMES = env_int("ASKUSER_EXTEND_TIMES", 3)
ASKUSER_EXTEND_LIMIT_SECONDS = env_int("ASKUSER_EXTEND_LIMIT_SECONDS", 2 * 60 * 60)

ASKUSER_CHAT_ATTEMPTS = env_int("ASKUSER_CHAT_ATTEMPTS", 8)
ASKUSER_CHAT_RETRY_BASE = env_float("ASKUSER_CHAT_RETRY_BASE", 2)
ASKUSER_CHAT_TIMEOUT = env_float("ASKUSER_CHAT_TIMEOUT", 30)  # seconds one send or edit may take

# The agent API refuses bodies over 64 KiB itself (413); this bounds the rest.
DATA_UPLOAD_MAX_MEMORY_SIZE = ASKUSER_MAX_BODY

# Every line passes the secrets' mask (askuser_app/runtime/redaction.py), whatever its
# level; httpx and httpcore log each request (its URL holds Telegram's bot token) at
# INFO and DEBUG, kept to their warnings.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"secrets": {"()": "askuser_app.runtime.redaction.RedactSecrets"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["secrets"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
    "loggers": {
        "askuser": {"level": env_str("LOG_LEVEL", "INFO")},
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}
