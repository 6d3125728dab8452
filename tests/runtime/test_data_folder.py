"""The data folder is private to the server's account, whatever the umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Migrate, then hold a connection open (so the -wal and -shm files exist) and report every mode.
SCRIPT = """
import json, os, stat, sys
os.umask(0o022)
import django
django.setup()
from django.core.management import call_command
from django.db import connection
call_command("migrate", verbosity=0)
with connection.cursor() as cursor:
    cursor.execute("SELECT COUNT(*) FROM django_session")
folder = sys.argv[1]
modes = {name: stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode) for name in os.listdir(folder)}
modes["."] = stat.S_IMODE(os.stat(folder).st_mode)
print(json.dumps(modes))
"""


def modes_after_migrate(folder: Path) -> dict[str, int]:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
    env.update(ASKUSER_DATA_DIR=str(folder), DJANGO_SETTINGS_MODULE="controlui.settings")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_new_data_folder_and_its_files_are_readable_by_the_owner_only(tmp_path):
    modes = modes_after_migrate(tmp_path / "data")

    assert modes.pop(".") == 0o700
    assert {"db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm", "secret_key"} <= set(modes)
    files = {name: mode for name, mode in modes.items() if name != "static"}
    assert files == dict.fromkeys(files, 0o600)


def test_an_existing_open_data_folder_is_closed_at_startup(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    for name in ("db.sqlite3", "secret_key", "demo-agent-token"):
        (folder / name).write_text("" if name == "db.sqlite3" else "kept\n")
        (folder / name).chmod(0o644)
    folder.chmod(0o755)

    modes = modes_after_migrate(folder)

    assert modes["."] == 0o700
    assert {name: modes[name] for name in ("db.sqlite3", "db.sqlite3-wal", "secret_key", "demo-agent-token")} == {
        "db.sqlite3": 0o600,
        "db.sqlite3-wal": 0o600,
        "secret_key": 0o600,
        "demo-agent-token": 0o600,
    }
    assert (folder / "secret_key").read_text() == "kept\n"
    assert not stat.S_IMODE((folder / "static").stat().st_mode) & 0o077


def test_reading_the_settings_writes_nothing_and_start_up_makes_the_folder(tmp_path):
    folder = tmp_path / "data"
    script = (
        "import os, pathlib, sys\n"
        "import controlui.settings\n"
        "print(pathlib.Path(sys.argv[1]).exists())\n"
        "import django\n"
        "django.setup()\n"
        "print(sorted(os.listdir(sys.argv[1])))\n"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY")}
    env.update(ASKUSER_DATA_DIR=str(folder), DJANGO_SETTINGS_MODULE="controlui.settings")

    done = subprocess.run(
        [sys.executable, "-c", script, str(folder)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, done.stderr
    after_import, after_setup = done.stdout.strip().splitlines()[-2:]
    assert after_import == "False"
    assert after_setup == str(["secret_key", "static", "vapid_private_key.pem"])


SETTINGS_READ = """
import json, sys
from django.conf import settings
before = settings.ASKUSER_PUBLIC_URL
import django
django.setup()
from askuser_app.runtime import datadir
folder = settings.DATA_DIR
print(json.dumps({
    "folder": str(folder),
    "public_url": before,
    "commands_url": datadir.default_server_url(folder),
    "secret_is_the_kept_one": str(settings.SECRET_KEY) == datadir.kept_secret(folder) != "",
    "secret_kept_again": str(settings.SECRET_KEY) == (folder / "secret_key").read_text().strip(),
}))
"""


def settings_read(folder: Path, **env: str) -> dict[str, object]:
    given = {key: value for key, value in os.environ.items() if key not in ("SECRET_KEY", "ASKUSER_URL")}
    given.update(ASKUSER_DATA_DIR=str(folder), DJANGO_SETTINGS_MODULE="controlui.settings", **env)
    given.pop("ASKUSER_PUBLIC_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", SETTINGS_READ], cwd=ROOT, env=given, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_settings_read_the_secret_key_and_the_address_the_data_folder_keeps(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "server-url").write_text("http://127.0.0.1:8765\n")

    read = settings_read(folder)

    assert read["folder"] == str(folder)
    assert read["public_url"] == read["commands_url"] == "http://127.0.0.1:8765"
    assert read["secret_is_the_kept_one"] and read["secret_kept_again"]


def test_the_settings_take_askuser_url_over_the_remembered_address_as_the_commands_do(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "server-url").write_text("http://127.0.0.1:8765\n")

    read = settings_read(folder, ASKUSER_URL="http://askuser.internal:9000")

    assert read["public_url"] == read["commands_url"] == "http://askuser.internal:9000"


def test_without_a_data_folder_the_public_url_is_the_default_one(tmp_path):
    read = settings_read(tmp_path / "new")

    assert read["public_url"] == read["commands_url"] == "http://127.0.0.1:8000"
