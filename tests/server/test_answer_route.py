"""The panel's answer as a browser sends it, through the whole ASGI application:
Django serves it on a thread kept for answers (askuser_app/server/keptthreads.py),
with every middleware as on any other page."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.core.signals import request_finished, request_started
from django.db import connection

from askuser_app.domain import contract, services
from askuser_app.models import Answer, Prompt, PromptEvent
from askuser_app.runtime import realtime
from askuser_app.server.keptthreads import environ
from askuser_app.web import ui
from tests.conftest import DEADLINE, asgi_request, log_in, payload

pytestmark = pytest.mark.django_db(transaction=True)

CSRF = "answercsrftokenanswercsrftoken12"  # an unmasked 32-character secret
FORM = {"q-deploy_target": "0", "action": "answer"}


@pytest.fixture
def pending(agent):
    return services.ask(agent, contract.parse_create(payload())).prompt


def headers(login: str | None, *, csrf: bool = True, htmx: bool = True) -> dict[str, str]:
    cookies = [f"sessionid={login}"] if login else []
    cookies += [f"csrftoken={CSRF}"] if csrf else []
    return {
        "Cookie": "; ".join(cookies),
        **({"X-CSRFToken": CSRF} if csrf else {}),
        **({"HX-Request": "true"} if htmx else {}),
    }


async def answer(prompt: Prompt, login: str | None, form=FORM, **kwargs):
    url = f"/s/support-42/prompts/{prompt.pk}/answer"
    return await asgi_request("POST", url, data=form, headers=headers(login, **kwargs))


async def still_pending(prompt: Prompt) -> bool:
    current = await Prompt.objects.aget(pk=prompt.pk)
    return current.is_pending and not await Answer.objects.filter(question__prompt=prompt).aexists()


async def test_an_answer_is_recorded_once_and_the_panel_closes(pending, owner):
    response = await answer(pending, await sync_to_async(log_in)(owner))

    html = response.text
    assert response.status_code == 200
    assert f'<section id="prompt-panel" class="panel" hidden data-closes="{pending.pk}" hx-swap-oob="true">' in html
    assert f'id="item-prompt-{pending.pk}"' in html and "Staging (Recommended)" in html
    current = await Prompt.objects.aget(pk=pending.pk)
    assert current.result["answers"]["answers"] == {"deploy_target": ["Staging (Recommended)"]}
    assert await Answer.objects.filter(question__prompt=pending).acount() == 1
    assert await PromptEvent.objects.filter(prompt=pending, kind="answered").acount() == 1


async def test_the_page_headers_are_django_s(pending, owner):
    response = await answer(pending, await sync_to_async(log_in)(owner))

    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_a_second_answer_is_told_it_lost_and_records_nothing(pending, owner):
    login = await sync_to_async(log_in)(owner)
    await answer(pending, login)

    again = await answer(pending, login, form={"q-deploy_target": "1", "action": "answer"})

    assert again.status_code == 200 and "already" in again.text.lower()
    assert await Answer.objects.filter(question__prompt=pending).acount() == 1


async def test_without_the_csrf_token_nothing_changes(pending, owner):
    response = await answer(pending, await sync_to_async(log_in)(owner), csrf=False)

    assert response.status_code == 403
    assert await still_pending(pending)


async def test_without_a_login_the_browser_is_sent_to_log_in(pending):
    response = await answer(pending, None)

    assert response.status_code == 302 and response.headers["location"].startswith("/login/?next=/s/")
    assert await still_pending(pending)


async def test_someone_else_s_prompt_is_not_found(pending, other_user):
    response = await answer(pending, await sync_to_async(log_in)(other_user))

    assert response.status_code == 404
    assert await still_pending(pending)


async def test_a_form_posted_without_htmx_goes_back_to_the_session_page(pending, owner):
    response = await answer(pending, await sync_to_async(log_in)(owner), htmx=False)

    assert response.status_code == 302 and response.headers["location"] == "/s/support-42/"
    assert not (await Prompt.objects.aget(pk=pending.pk)).is_pending


async def test_a_form_that_cannot_be_read_changes_nothing(pending, owner):
    response = await answer(pending, await sync_to_async(log_in)(owner), form={"q-deploy_target": "7"})

    assert response.status_code == 422 and "is not one of its options" in response.text
    assert await still_pending(pending)


async def test_each_answer_is_a_whole_request_to_django(pending, owner):
    # request_finished is what closes a broken connection, or returns it to the pool.
    signals: list[tuple[str, str]] = []

    def started(**kwargs) -> None:
        signals.append(("started", threading.current_thread().name))

    def finished(**kwargs) -> None:
        signals.append(("finished", threading.current_thread().name))

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        response = await answer(pending, await sync_to_async(log_in)(owner))
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)

    assert response.status_code == 200
    assert [kind for kind, _ in signals] == ["started", "finished"]
    assert all(thread.startswith("answer") for _, thread in signals)


async def answer_seen_by(pending: Prompt, login: str, send_fails: bool = False) -> list[str]:
    """What happened first: the answering page's response, or a wait on the prompt hearing of the answer."""
    from controlui.asgi import application

    seen: list[str] = []

    async def recording(scope, receive, send):
        async def sending(message):
            if message["type"] == "http.response.body":
                seen.append("response")
                if send_fails:
                    raise OSError("the page went away")
            await send(message)

        await application(scope, receive, sending)

    async with realtime.hub().listen(realtime.prompt_group(pending.pk)) as inbox:
        heard = asyncio.create_task(inbox.get())
        heard.add_done_callback(lambda _: seen.append("announced"))
        transport = httpx.ASGITransport(app=recording)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            url = f"/s/support-42/prompts/{pending.pk}/answer"
            try:
                await client.post(url, data=FORM, headers=headers(login))
            except OSError:
                assert send_fails
        message = await asyncio.wait_for(heard, 10)
    assert message["type"] == "prompt.resolved" and message["result"]["status"] == "answered"
    return seen


async def test_the_answering_page_has_its_response_before_the_answer_is_announced(pending, owner):
    assert await answer_seen_by(pending, await sync_to_async(log_in)(owner)) == ["response", "announced"]


async def test_the_answer_is_announced_when_its_response_cannot_be_sent(pending, owner):
    seen = await answer_seen_by(pending, await sync_to_async(log_in)(owner), send_fails=True)

    assert seen == ["response", "announced"]
    assert (await Prompt.objects.aget(pk=pending.pk)).status == "answered"


async def test_the_sessions_pages_are_told_to_close_the_panel_while_the_answers_response_renders(
    pending, owner, monkeypatch
):
    # The closed panel reads nothing: it goes at commit (realtime's ``at_once``), not after the response.
    layer = get_channel_layer()
    closing_sent, group_send = threading.Event(), layer.group_send

    async def watching(group: str, message: dict) -> None:
        if message["type"] == "prompt.closed" and message["prompt_id"] == str(pending.pk):
            closing_sent.set()
        await group_send(group, message)

    monkeypatch.setattr(layer, "group_send", watching)
    render_resolved, seen = ui.render_resolved, []

    def rendering(prompt: Prompt) -> str:
        seen.append(closing_sent.wait(DEADLINE))  # on the answer's thread, after its commit
        return render_resolved(prompt)

    monkeypatch.setattr(ui, "render_resolved", rendering)
    response = await answer(pending, await sync_to_async(log_in)(owner))

    assert response.status_code == 200 and seen == [True]


def test_the_environ_is_the_request_as_wsgi_has_it():
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/s/café/prompts/x/answer",
        "root_path": "",
        "query_string": b"a=1&b=%C3%A9",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"cookie", b"sessionid=abc"),
            (b"cookie", b"csrftoken=def"),
            (b"accept", b"text/html"),
            (b"accept", b"*/*"),
            (b"x-forwarded_proto", b"https"),  # an underscore: it would pass for X-Forwarded-Proto
        ],
        "client": ("10.0.0.7", 51000),
        "server": ("127.0.0.1", 8000),
        "scheme": "http",
        "http_version": "1.1",
    }

    env = environ(scope, b"a=b")  # sent chunked, without a Content-Length

    assert env["PATH_INFO"] == "/s/café/prompts/x/answer".encode().decode("latin-1")
    assert env["QUERY_STRING"] == "a=1&b=%C3%A9" and env["REQUEST_METHOD"] == "POST"
    assert (env["CONTENT_TYPE"], env["CONTENT_LENGTH"]) == ("application/x-www-form-urlencoded", "3")
    assert env["HTTP_COOKIE"] == "sessionid=abc; csrftoken=def" and env["HTTP_ACCEPT"] == "text/html,*/*"
    assert "HTTP_X_FORWARDED_PROTO" not in env
    assert (env["REMOTE_ADDR"], env["SERVER_NAME"], env["SERVER_PORT"]) == ("10.0.0.7", "127.0.0.1", "8000")
    assert env["wsgi.input"].read() == b"a=b" and env["wsgi.url_scheme"] == "http"


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PostgreSQL's answers share a pool")
async def test_on_sqlite_answers_run_on_one_thread_with_one_open_connection(agent, owner, monkeypatch):
    seen: list[tuple[str, int]] = []
    record = services.answer

    def recording(*args, **kwargs):
        seen.append((threading.current_thread().name, id(connection.connection)))
        return record(*args, **kwargs)

    monkeypatch.setattr(services, "answer", recording)
    login = await sync_to_async(log_in)(owner)
    for number in range(3):
        body = payload(session="support-42", run_id=f"r{number}")
        prompt = await sync_to_async(lambda b=body: services.ask(agent, contract.parse_create(b)).prompt)()
        assert (await answer(prompt, login)).status_code == 200

    assert len(seen) == 3 and len(set(seen)) == 1 and seen[0][0].startswith("answer")
