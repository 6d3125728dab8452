"""The deployment recipe (deploy/, docs/DEPLOYMENT.md), brought up and used: nginx over TLS in
front of two server processes and the worker, sharing PostgreSQL and Redis.

One nginx and one set of processes serve every test here, in this order: the static files
from disk, a person's live session and an agent's long-poll, a hook held for the person, the
login lockout against a forged ``X-Forwarded-For``, and last a process killed behind nginx.
nginx is rendered from deploy/nginx/askuser.conf into a folder of the module's own and runs
as a child (``-p folder -c nginx.conf``, not a daemon); the processes get the settings of
deploy/systemd/askuser.env, with this test's database, Redis and addresses in place of the
site's. The certificate is made here, for 127.0.0.1.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.db import connection

from askuser_app.domain import services
from askuser_app.models import Prompt, PromptEvent
from tests.browsers import CHROMIUM, VIEWPORT, playwright_api
from tests.conftest import PASSWORD, QUESTION, SCALED, SCALED_REASON, log_in, payload, until_sync
from tests.servers import ROOT, DaphneServer, free_port

try:
    from playwright.sync_api import expect
except ImportError:  # the browsers' marks below skip this module
    expect = None

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
REQUIRED = bool(os.environ.get("ASKUSER_REQUIRE_SCALED"))

pytestmark = [
    pytest.mark.scaled,
    pytest.mark.live,
    pytest.mark.browser,
    pytest.mark.skipif(not SCALED, reason=f"two processes share their state: the deployment {SCALED_REASON}"),
    pytest.mark.skipif(
        NGINX is None and not REQUIRED, reason="needs Debian's nginx: apt-get install -y nginx (.ci/run does)"
    ),
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium: apt-get install -y chromium (.ci/run does)"),
    pytest.mark.skipif(playwright_api is None, reason="needs Playwright: install the test requirements"),
    pytest.mark.django_db(transaction=True),
]

# The units' commands (deploy/systemd/), as Python's arguments.
SERVE = ("manage.py", "serve", "--no-worker", "-v", "0")
WORKER = ("manage.py", "worker")
WORKER_EXISTS = (ROOT / "askuser_app" / "management" / "commands" / "worker.py").exists()

SITE = ROOT / "deploy" / "nginx" / "askuser.conf"
ENV_FILE = ROOT / "deploy" / "systemd" / "askuser.env"
WAIT_MS = 10_000
# Counts the page's socket openings on its root element, from before its scripts run.
SOCKET_OPENS = """
document.addEventListener("htmx:wsOpen", () => {
  const root = document.documentElement;
  root.dataset.liveOpens = String(Number(root.dataset.liveOpens || 0) + 1);
});
"""


@pytest.fixture(scope="module", autouse=True)
def nginx_installed() -> None:
    if NGINX is None:
        pytest.fail("ASKUSER_REQUIRE_SCALED is set, but nginx is not installed (apt-get install -y nginx)")


def recipe_env() -> dict[str, str]:
    """deploy/systemd/askuser.env, as systemd's ``EnvironmentFile=`` reads it."""
    lines = (line.strip() for line in ENV_FILE.read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as an operator makes one to try the recipe."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "askuser.crt", folder / "askuser.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    key_path.write_bytes(key_bytes)
    return cert_path, key_path


def rendered_site(values: dict[str, str]) -> str:
    """The site with its ``@NAME@`` placeholders filled in, as docs/DEPLOYMENT.md's sed line does."""
    site = SITE.read_text()
    for name, value in values.items():
        site = site.replace(f"@{name}@", value)
    left = re.findall(r"@[A-Z_0-9]+@", site)
    assert not left, f"placeholders the test does not fill: {left}"
    return site


def main_config(folder: Path) -> str:
    """Debian's /etc/nginx/nginx.conf, cut to what the site needs, everything in ``folder``."""
    # Run as root (CI), nginx's workers would be nobody, who cannot enter the test's folders.
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""
{user}
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log;
events {{ worker_connections 512; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log {folder}/access.log;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    include {folder}/askuser.conf;
}}
"""


class Deployment:
    """nginx on ``url`` (TLS) in front of ``servers``; the processes start with ``start``."""

    def __init__(self, folder: Path, server_env: dict[str, str]) -> None:
        self.folder = folder
        self.https_port, self.http_port = free_port(), free_port()
        self.url = f"https://127.0.0.1:{self.https_port}"
        self.certificate, key = self_signed(folder)
        self.tls = ssl.create_default_context(cafile=str(self.certificate))
        self.env = {
            **server_env,
            **recipe_env(),
            # The site's own, in this test: its database, Redis, key, data, address.
            "DATABASE_URL": server_env["DATABASE_URL"],
            "REDIS_URL": server_env["REDIS_URL"],
            "SECRET_KEY": server_env["SECRET_KEY"],
            "ASKUSER_DATA_DIR": server_env["ASKUSER_DATA_DIR"],
            "ASKUSER_STATIC_ROOT": str(folder / "static"),
            "ALLOWED_HOSTS": "127.0.0.1",
            "ASKUSER_PUBLIC_URL": self.url,
            "ASKUSER_LOGIN_FAILURES": "2",
        }
        self.servers = [DaphneServer(self.env, command=SERVE) for _ in range(2)]
        self.worker: subprocess.Popen[bytes] | None = None
        self.nginx: subprocess.Popen[bytes] | None = None
        self.static_root = folder / "static"
        self.site = {
            "SERVER_NAME": "127.0.0.1",
            "HTTPS_PORT": str(self.https_port),
            "HTTP_PORT": str(self.http_port),
            "PORT_1": str(self.servers[0].port),
            "PORT_2": str(self.servers[1].port),
            "TLS_CERTIFICATE": str(self.certificate),
            "TLS_KEY": str(key),
            "STATIC_ROOT": str(self.static_root),
        }

    def collect_static(self) -> None:
        command = [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"]
        subprocess.run(command, cwd=ROOT, env=self.env, check=True)

    def start_nginx(self) -> None:
        (self.folder / "askuser.conf").write_text(rendered_site(self.site))
        (self.folder / "nginx.conf").write_text(main_config(self.folder))
        log = self.folder / "error.log"
        command = [str(NGINX), "-p", str(self.folder), "-c", str(self.folder / "nginx.conf"), "-e", str(log)]
        self.nginx = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not listening(self.https_port):
            assert self.nginx.poll() is None, f"nginx did not start:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"nginx did not listen:\n{log.read_text()}"
            time.sleep(0.02)

    def start(self) -> None:
        """The server processes and (once it exists) the worker, as the units start them."""
        for server in self.servers:
            if server.process is None:
                server.start()
        if WORKER_EXISTS and self.worker is None:
            with (self.folder / "worker.log").open("ab") as log:
                self.worker = subprocess.Popen(
                    [sys.executable, *WORKER], cwd=ROOT, env=self.env, stdout=log, stderr=log
                )

    def client(self, source: str = "127.0.0.1") -> httpx.Client:
        """An HTTPS client of the site, trusting its certificate, connecting from ``source``."""
        transport = httpx.HTTPTransport(verify=self.tls, local_address=source)
        return httpx.Client(base_url=self.url, transport=transport, timeout=60)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
        for process in (self.worker, self.nginx):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(10)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def connections_served(port: int) -> int:
    """Open TCP connections a process accepted on ``port`` (nginx's to it: its sockets, its waits)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            count += state == "01" and int(local.rsplit(":", 1)[1], 16) == port  # 01: ESTABLISHED
    return count


@pytest.fixture(scope="module")
def proxy(server_env, tmp_path_factory) -> Iterator[Deployment]:
    """nginx listening, the server processes' sockets held but not served yet."""
    deployment = Deployment(tmp_path_factory.mktemp("deploy"), server_env)
    try:
        deployment.collect_static()
        deployment.start_nginx()
        yield deployment
    finally:
        deployment.stop()


@pytest.fixture
def deployment(proxy) -> Deployment:
    proxy.start()
    return proxy


@pytest.fixture
def browser_context(chromium, deployment, owner):
    context = chromium.new_context(base_url=deployment.url, ignore_https_errors=True, viewport=VIEWPORT)
    context.add_cookies([{"name": "sessionid", "value": log_in(owner), "url": deployment.url}])
    yield context
    context.close()


def open_session(context, agent):
    """The session's page over TLS through nginx, its live socket open."""
    services.post_agent_message(agent, "support-42", "Hi! I'm getting release 2.4 ready.")
    page = context.new_page()
    page.add_init_script(SOCKET_OPENS)
    page.goto("/s/support-42/")
    expect(page.locator("html")).to_have_attribute("data-live-opens", "1", timeout=WAIT_MS)
    return page


def agent_asks(deployment: Deployment, token: str) -> str:
    with deployment.client() as client:
        created = client.post("/api/v1/prompts", json=payload(QUESTION), headers={"Authorization": f"Bearer {token}"})
    assert created.status_code == 201, created.text
    return created.json()["id"]


def agent_waits(deployment: Deployment, token: str, prompt_id: str) -> dict:
    """The agent's long-poll through nginx, repeated as the client does when a process is gone."""
    deadline = time.monotonic() + 30
    with deployment.client() as client:
        while time.monotonic() < deadline:
            response = client.get(f"/api/v1/prompts/{prompt_id}?wait=10", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code in (200, 502), response.text
            if response.status_code == 200 and response.json()["status"] != "pending":
                return response.json()
    raise AssertionError("the prompt was never answered")


def test_nginx_serves_the_static_files_from_disk_and_sends_plain_http_to_https(proxy):
    # The server processes hold their sockets but serve nothing yet: whatever is answered, nginx answered.
    with proxy.client() as client:
        stylesheet = client.get("/static/askuser/app.css", timeout=5)
        redirected = httpx.get(f"http://127.0.0.1:{proxy.http_port}/s/support-42/", timeout=5)

    assert stylesheet.status_code == 200
    assert stylesheet.content == (ROOT / "static" / "askuser" / "app.css").read_bytes()
    assert stylesheet.headers["cache-control"] == "max-age=3600"
    assert redirected.status_code == 301
    assert redirected.headers["location"] == "https://127.0.0.1/s/support-42/"


def test_a_person_answers_live_over_tls_and_the_agents_long_poll_through_nginx_gets_it(
    deployment, browser_context, agent, token
):
    static: list[str] = []
    browser_context.on(
        "response", lambda r: static.append(r.headers.get("cache-control", "")) if "/static/" in r.url else None
    )
    page = open_session(browser_context, agent)

    prompt_id = agent_asks(deployment, token)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(agent_waits, deployment, token, prompt_id)
        panel = page.locator(f"#prompt-panel[data-prompt-id='{prompt_id}']")
        expect(panel).to_be_visible(timeout=WAIT_MS)  # pushed over the socket, through nginx
        panel.get_by_text("Production").click()
        result = waiting.result(timeout=30)

    assert result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    expect(page.locator(f"#item-prompt-{prompt_id}")).to_contain_text("Production")
    assert static and set(static) == {"max-age=3600"}  # every script and stylesheet came from nginx


def answer_in_a_thread(prompt: Prompt, answers: dict[str, str], person) -> None:
    try:
        services.answer(prompt, answers, by=person, surface="web")
    finally:
        connection.close()


def test_a_hook_is_held_through_nginx_until_the_person_answers(deployment, owner, token):
    event = {
        "session_id": "5f1c2e7a-1d2b-4c11-9a3e-0b6f7f4d2e10",
        "transcript_path": "/home/alice/.claude/projects/x.jsonl",
        "cwd": "/home/alice/app",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test", "description": "Run the tests"},
    }
    with deployment.client() as client, concurrent.futures.ThreadPoolExecutor(2) as pool:
        held = pool.submit(
            client.post, "/api/v1/hooks?wait=120", json=event, headers={"Authorization": f"Bearer {token}"}
        )
        until_sync(lambda: Prompt.objects.filter(status="pending").exists())
        prompt = Prompt.objects.get(status="pending")
        question = prompt.questions.get()
        # On a thread of its own: Playwright's loop, running on this one, would keep the answer's
        # announcement (async_to_sync) from leaving this process.
        pool.submit(answer_in_a_thread, prompt, {question.key: "Allow"}, owner).result(timeout=10)
        response = held.result(timeout=30)

    assert response.status_code == 200
    assert response.json()["hookSpecificOutput"]["decision"]["behavior"] == "allow"


def test_a_forged_x_forwarded_for_does_not_lift_the_login_lockout(deployment, owner):
    def log_in_from(source: str, password: str, forged: str) -> httpx.Response:
        with deployment.client(source) as client:
            form = client.get("/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
            assert token, form.text
            fields = {"username": owner.username, "password": password, "csrfmiddlewaretoken": token[1]}
            headers = {"Origin": deployment.url, "X-Forwarded-For": forged}
            return client.post("/login/", data=fields, headers=headers)

    # Two wrong passwords from 127.0.0.2 lock alice out there, whatever address each request claims.
    wrong = [log_in_from("127.0.0.2", "wrong", forged=f"203.0.113.{n}") for n in (1, 2)]
    refused = log_in_from("127.0.0.2", PASSWORD, forged="203.0.113.3")
    elsewhere = log_in_from("127.0.0.3", PASSWORD, forged="203.0.113.1")

    assert [response.status_code for response in wrong] == [200, 429]  # the second reaches the limit
    assert refused.status_code == 429  # the right password too
    assert elsewhere.status_code == 302  # another address: the lockout was 127.0.0.2's, not nginx's


def test_a_process_killed_behind_nginx_loses_nothing_and_the_page_reconnects(deployment, browser_context, agent, token):
    page = open_session(browser_context, agent)
    prompt_id = agent_asks(deployment, token)
    panel = page.locator(f"#prompt-panel[data-prompt-id='{prompt_id}']")
    expect(panel).to_be_visible(timeout=WAIT_MS)

    # The process that holds the page's socket (the only connection nginx keeps open now).
    until_sync(lambda: any(connections_served(server.port) for server in deployment.servers))
    victim = next(server for server in deployment.servers if connections_served(server.port))
    victim.kill()

    expect(page.locator("html")).to_have_attribute("data-live-opens", "2", timeout=WAIT_MS)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(agent_waits, deployment, token, prompt_id)
        panel.get_by_text("Production").click()
        result = waiting.result(timeout=30)

    assert result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    expect(panel).to_be_hidden()
    terminal = PromptEvent.objects.filter(prompt_id=prompt_id, kind__in=PromptEvent.TERMINAL)
    assert terminal.count() == 1
    if deployment.worker is not None:
        assert deployment.worker.poll() is None, (deployment.folder / "worker.log").read_text()
