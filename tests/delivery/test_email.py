"""Email: an unanswered prompt mailed after the owner's delay through a real SMTP server
(aiosmtpd, tests/mailfake.py) by the delivery engine, and the mail's signed links: a GET
shows, one POST answers or adds time, and nothing else changes anything."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.core import signing
from django.test import Client
from django.utils import timezone, translation

from askuser_app.delivery import engine
from askuser_app.delivery.channels import links as signed_links
from askuser_app.delivery.channels.base import Card
from askuser_app.delivery.channels.email import mails as email
from askuser_app.delivery.channels.email.adapter import adapter as email_adapter
from askuser_app.domain import contract, prefs, services
from askuser_app.models import Delivery, Preferences, Prompt, PromptEvent
from askuser_app.runtime.asyncdb import database_call
from tests.conftest import EXTRAS, QUESTION, asgi_request, auth, payload, until_async
from tests.mailfake import parts
from tests.servers import SERVE, DaphneServer, free_port
from tests.threads import requests_thread_held

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = "https://askuser.example.com"
ADDRESS = "alice@example.com"
DEADLINE = 15
LINK = re.compile(re.escape(PUBLIC) + r"(/chat/email/[^/\s\"<>]+/)")


@pytest.fixture
def smtp(settings, smtp_server):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp_server.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_TIMEOUT = 5
    settings.ASKUSER_EMAIL_SMTP = True
    settings.ASKUSER_PUBLIC_URL = PUBLIC
    settings.ASKUSER_CHAT_RETRY_BASE = 0.05
    return smtp_server


@pytest.fixture
def addressed(owner):
    owner.email = ADDRESS
    owner.save(update_fields=["email"])
    return owner


def wait_seconds(user, seconds: int) -> None:
    """The owner's delay; the settings page offers whole minutes, the tests take a second."""
    Preferences.objects.update_or_create(user=user, defaults={"email_after": seconds})


def ask(agent, *questions, session: str = "support-42") -> Prompt:
    return services.ask(agent, contract.parse_create(payload(*questions, session=session))).prompt


def fresh(prompt: Prompt) -> Prompt:
    return Prompt.objects.get(pk=prompt.pk)


async def create(token: str, *questions) -> str:
    request = asgi_request("POST", "/api/v1/prompts", json=payload(*questions), headers=auth(token))
    response = await asyncio.wait_for(request, DEADLINE)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def mail_of(prompt: Prompt) -> tuple[str, str]:
    """The plain text and HTML of the mail the delivery engine would send now."""
    composed = email.compose(prompt.pk, ADDRESS)
    assert composed is not None
    [(html, _mime)] = composed.message.alternatives
    return str(composed.message.body), str(html)


def links(text: str) -> list[str]:
    return LINK.findall(text)


# --- who is mailed, and when ---------------------------------------------------------------------


def test_with_smtp_an_owner_with_an_address_is_mailed_after_two_minutes_by_default(smtp, agent, addressed):
    prompt = ask(agent)

    [row] = Delivery.objects.filter(channel="email")
    assert (row.address, row.state, row.link_id) == (ADDRESS, "to_send", None)
    waited = row.next_attempt_at - prompt.created_at
    assert timedelta(seconds=120) <= waited < timedelta(seconds=130)


def test_no_address_no_choice_or_off_means_no_mail(smtp, settings, agent, owner, other_user):
    ask(agent)  # alice has no address
    addressed_bob = other_user
    addressed_bob.email = "bob@example.com"
    addressed_bob.save()
    prefs.choose_email_after(addressed_bob, 0)
    ask(services.create_agent("b", addressed_bob)[0])
    settings.ASKUSER_EMAIL_SMTP = False  # the file backend: off unless chosen
    owner.email = ADDRESS
    owner.save()
    ask(agent, session="support-43")

    assert not Delivery.objects.exists()


def test_the_file_backend_mails_those_who_chose_it(settings, agent, addressed):
    settings.ASKUSER_EMAIL_SMTP = False
    prefs.choose_email_after(addressed, 300)

    prompt = ask(agent)

    [row] = Delivery.objects.all()
    assert row.next_attempt_at - prompt.created_at == pytest.approx(timedelta(seconds=300), abs=timedelta(seconds=1))


def test_a_create_reads_the_owners_address_and_preferences_in_one_query(
    smtp, agent, addressed, django_assert_num_queries
):
    from askuser_app.delivery.channels.email.adapter import adapter

    prompt = ask(agent)
    with django_assert_num_queries(1):
        [recipient] = adapter.recipients(prompt)
    assert recipient.address == ADDRESS


def test_a_create_after_the_first_reads_no_address_and_still_mails(smtp, agent, addressed):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    ask(agent)
    with CaptureQueriesContext(connection) as second:
        ask(agent, session="support-43")

    assert not [q for q in second.captured_queries if "auth_user" in q["sql"]]
    assert list(Delivery.objects.values_list("address", flat=True)) == [ADDRESS, ADDRESS]


def test_a_changed_address_choice_or_setting_is_followed_by_the_next_create(smtp, settings, agent, addressed):
    ask(agent)
    addressed.email = "new@example.com"
    addressed.save()
    ask(agent, session="support-43")
    prefs.choose_email_after(addressed, 0)
    ask(agent, session="support-44")
    Preferences.objects.filter(user=addressed).delete()  # the default again: two minutes with SMTP
    ask(agent, session="support-45")
    settings.ASKUSER_EMAIL_SMTP = False  # the file backend: off unless chosen
    ask(agent, session="support-46")

    sessions = Delivery.objects.order_by("id").values_list("prompt__session__key", "address")
    assert list(sessions) == [
        ("support-42", ADDRESS),
        ("support-43", "new@example.com"),
        ("support-45", "new@example.com"),
    ]


# --- the loop delivers -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_engine_mails_an_unanswered_prompt_once_its_delay_has_passed(smtp, addressed, token, served_loops):
    await database_call(wait_seconds)(addressed, 1)

    prompt_id = await create(token)

    [mail] = await asyncio.to_thread(smtp.wait_for, 1)
    prompt = await database_call(Prompt.objects.get)(pk=prompt_id)
    row = await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())
    assert row.next_attempt_at >= prompt.created_at + timedelta(seconds=1)
    assert mail["To"] == ADDRESS and mail["Subject"] == "helper asks: Deploy"
    assert mail["Auto-Submitted"] == "auto-generated" and row.ref == {"message_id": mail["Message-ID"].strip()}
    plain, html = parts(mail)
    for text in (plain, html):
        assert "Where should this release go first?" in text
        assert "Staging (Recommended)" in text and "Safe, reversible" in text and "Production" in text
        assert "Time left: 14 minutes (until " in text.replace("<strong>", "").replace("</strong>", "").replace(
            "\xa0", " "
        )
        assert f"{PUBLIC}/p/{prompt_id}/" in text
    # One link per option, then More time; the HTML carries the same links.
    assert len(links(plain)) == 3 and [link.replace("&amp;", "&") for link in links(html)] == links(plain)


@pytest.mark.django_db(transaction=True)
async def test_a_mail_goes_out_while_the_thread_that_answers_requests_is_held(smtp, agent, addressed):
    await database_call(wait_seconds)(addressed, 1)
    await database_call(ask)(agent)

    async with requests_thread_held():  # a slow request: the engine reads and records on its own thread
        engine.ensure_running()
        [mail] = await asyncio.to_thread(smtp.wait_for, 1)

    assert mail["Subject"] == "helper asks: Deploy"


@pytest.mark.django_db(transaction=True)
async def test_a_prompt_answered_before_its_delay_is_never_mailed(smtp, addressed, owner, token):
    await database_call(wait_seconds)(addressed, 60)
    prompt_id = await create(token)
    prompt = await database_call(Prompt.objects.get)(pk=prompt_id)

    await database_call(services.answer)(prompt, {"deploy_target": "Production"}, by=owner, surface="web")

    row = await database_call(Delivery.objects.get)(prompt_id=prompt_id)
    assert row.state == "dropped"
    await database_call(Delivery.objects.filter(pk=row.pk).update)(next_attempt_at=timezone.now())
    assert await database_call(engine.claim_due)(8) == []
    assert smtp.mails == [] and smtp.rcpt_tries == 0


def test_a_send_that_finds_the_prompt_resolved_mails_nothing(smtp, agent, addressed):
    prompt = ask(agent)
    card = Card(prompt.pk, "helper", "Deploy", "", (), "", (), prompt.expires_at, True)
    services.answer(prompt, {"deploy_target": "Production"}, by=addressed, surface="web")

    ref = async_to_sync(email_adapter.send)(ADDRESS, card)

    assert ref == {"not_sent": "no longer waiting for this address"} and smtp.rcpt_tries == 0


def test_a_mail_after_the_owner_turned_mail_off_or_changed_address_is_not_sent(smtp, agent, addressed):
    prompt = ask(agent)
    assert email.compose(prompt.pk, ADDRESS) is not None

    addressed.email = "new@example.com"
    addressed.save()
    assert email.compose(prompt.pk, ADDRESS) is None
    prefs.choose_email_after(addressed, 0)
    assert email.compose(prompt.pk, "new@example.com") is None


@pytest.mark.django_db(transaction=True)
async def test_a_permanent_refusal_fails_the_mail_after_one_try(smtp, addressed, token, served_loops):
    smtp.refuse_rcpt = "550 5.1.1 No such user here"
    await database_call(wait_seconds)(addressed, 1)

    prompt_id = await create(token)

    row = await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="failed").first())
    assert row.attempts == 1 and "550" in row.last_error and "No such user" in row.last_error
    assert smtp.mails == []


@pytest.mark.django_db(transaction=True)
async def test_a_deferral_is_retried_until_the_server_takes_the_mail(smtp, addressed, token, served_loops):
    smtp.refuse_rcpt = "450 4.2.1 Mailbox busy, try later"
    await database_call(wait_seconds)(addressed, 1)
    prompt_id = await create(token)
    await asyncio.to_thread(smtp.wait_for_tries, 2)  # tried, deferred, tried again

    smtp.refuse_rcpt = ""

    await asyncio.to_thread(smtp.wait_for, 1)
    row = await until_async(lambda: Delivery.objects.filter(prompt_id=prompt_id, state="sent").first())
    attempts = await database_call(lambda: list(row.tries.order_by("id").values_list("ok", "error")))()
    assert attempts[-1] == (True, "")
    assert all("450" in error for ok, error in attempts[:-1]) and len(attempts) >= 3


@pytest.mark.django_db(transaction=True)  # the engine composes on its own connection
def test_an_unreachable_server_is_retried_later(smtp, settings, agent, addressed):
    settings.EMAIL_PORT = free_port()  # nothing listens there
    ask(agent)
    Delivery.objects.update(next_attempt_at=timezone.now())
    [claimed] = engine.claim_due(8)

    tried = async_to_sync(engine.attempt)(claimed)
    engine.record(claimed, tried)

    row = Delivery.objects.get()
    outcome = tried.outcome
    assert not outcome.final and "could not be reached" in outcome.error
    assert row.state == "to_send" and row.attempts == 1 and row.next_attempt_at > timezone.now()


@pytest.mark.django_db(transaction=True)  # the engine composes on its own connection
@pytest.mark.parametrize(
    ("refusal", "final"), [("553 5.7.1 Sender not allowed", True), ("451 4.3.0 Try again later", False)]
)
def test_a_refused_sender_fails_for_good_on_5xx_and_is_retried_on_4xx(smtp, agent, addressed, refusal, final):
    smtp.refuse_mail = refusal
    ask(agent)
    Delivery.objects.update(next_attempt_at=timezone.now())
    [claimed] = engine.claim_due(8)

    tried = async_to_sync(engine.attempt)(claimed)
    engine.record(claimed, tried)

    row = Delivery.objects.get()
    outcome = tried.outcome
    assert outcome.final is final and refusal.split()[0] in row.last_error
    assert row.state == ("failed" if final else "to_send") and smtp.mails == []


def test_without_email_host_mail_is_written_into_the_private_data_folder(tmp_path):
    script = (
        "import django, json, os, stat\n"
        "django.setup()\n"
        "from django.conf import settings\n"
        "from django.core.mail import send_mail\n"
        "send_mail('Deploy?', 'Where should this release go first?', None, ['alice@example.com'])\n"
        "folder = settings.EMAIL_FILE_PATH\n"
        "files = {f: stat.S_IMODE(os.stat(folder / f).st_mode) for f in os.listdir(folder)}\n"
        "print(json.dumps([settings.EMAIL_BACKEND, str(folder), stat.S_IMODE(os.stat(folder).st_mode), files]))\n"
    )
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("EMAIL_") and k not in ("DATABASE_URL", "SECRET_KEY")
    }
    env.update(ASKUSER_DATA_DIR=str(tmp_path / "data"), DJANGO_SETTINGS_MODULE="controlui.settings")
    os.umask(old := os.umask(0o022))
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr

    backend, folder, folder_mode, files = json.loads(done.stdout.strip().splitlines()[-1])
    assert backend == "askuser_app.delivery.channels.email.backend.EmailBackend" and folder == str(
        tmp_path / "data" / "mail"
    )
    assert folder_mode == 0o700 and list(files.values()) == [0o600]
    [name] = files
    assert "Where should this release go first?" in (Path(folder) / name).read_text()
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700


# --- the mail's links ------------------------------------------------------------------------------


def test_the_mail_has_one_link_per_option_only_for_a_single_single_select_question(smtp, agent, addressed):
    one = ask(agent)
    several = ask(agent, QUESTION, EXTRAS, session="support-43")

    plain_one, _ = mail_of(one)
    plain_several, html_several = mail_of(several)

    assert len(links(plain_one)) == 3
    assert len(links(plain_several)) == 1  # More time only; the prompt's page answers the rest
    assert "Which extras should ship with it? (choose any)" in plain_several
    assert "Docs" in html_several and "Answer in askuser" in html_several


def test_the_subject_names_the_header_or_how_many_questions_wait(smtp, agent, addressed):
    one = ask(agent)
    several = ask(agent, QUESTION, EXTRAS, session="support-43")

    assert email.compose(one.pk, ADDRESS).message.subject == "helper asks: Deploy"
    assert email.compose(several.pk, ADDRESS).message.subject == "helper asks: 2 questions"


def choice_link(prompt: Prompt, option: str = "Production") -> str:
    plain, _html = mail_of(prompt)
    index = ["Staging (Recommended)", "Production"].index(option)
    return links(plain)[index]


def test_opening_a_one_tap_link_shows_the_choice_and_answers_nothing(smtp, agent, addressed):
    prompt = ask(agent)
    link = choice_link(prompt)

    page = Client().get(link)

    assert page.status_code == 200
    text = page.content.decode()
    assert "Your choice: <strong>Production</strong>" in text and "Answer “Production”" in text
    assert "Time left:" in text and f"/p/{prompt.pk}/" in text
    assert page["Cache-Control"] == "no-store, private" and page["Referrer-Policy"] == "same-origin"
    assert fresh(prompt).is_pending and not PromptEvent.objects.filter(kind="answered").exists()


def test_confirming_answers_by_email_once(smtp, agent, addressed, api):
    prompt = ask(agent)
    link = choice_link(prompt)
    browser = Client()

    first = browser.post(link, {"action": "answer"})
    second = browser.post(link, {"action": "answer"})

    assert first.status_code == 200 and "Answered: Production — by alice by email" in first.content.decode()
    result = api.get(f"/prompts/{prompt.pk}").json()
    assert (result["status"], result["surface"], result["resolved_by"]) == ("answered", "email", "alice")
    assert result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    assert second.status_code == 409 and "Answered: Production — by alice by email" in second.content.decode()
    assert PromptEvent.objects.filter(prompt=prompt, kind="answered").count() == 1


def test_the_confirm_form_needs_its_pages_csrf_token(smtp, agent, addressed):
    prompt = ask(agent)
    link = choice_link(prompt)
    browser = Client(enforce_csrf_checks=True)

    forged = browser.post(link, {"action": "answer"})
    page = browser.get(link).content.decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert csrf is not None
    confirmed = browser.post(link, {"action": "answer", "csrfmiddlewaretoken": csrf.group(1)})

    assert forged.status_code == 403 and confirmed.status_code == 200
    assert fresh(prompt).surface == "email"


def test_links_for_another_person_option_or_signer_and_tampered_ones_are_refused(smtp, agent, addressed, other_user):
    prompt = ask(agent)
    other_user.email = "bob@example.com"
    other_user.save()
    good = choice_link(prompt).split("/")[3]
    forged = {
        "another person": (email.make_token(prompt.pk, other_user, 1), 403),
        "no such option": (email.make_token(prompt.pk, addressed, 7), 400),
        "another prompt": (email.make_token(uuid.uuid4(), addressed, 1), 404),
        "tampered": (good[:-3] + ("aaa" if not good.endswith("aaa") else "bbb"), 400),
        "another salt": (signing.dumps([prompt.pk.hex, addressed.pk, email.address_digest(ADDRESS), 1]), 400),
        "garbage": ("not-a-token", 400),
    }
    for name, (token, status) in forged.items():
        for method in ("get", "post"):
            response = getattr(Client(), method)(
                f"/chat/email/{token}/", {"action": "answer"} if method == "post" else {}
            )
            assert response.status_code == status, (name, method, response.status_code)
            assert "This link cannot be used" in response.content.decode()
    assert fresh(prompt).is_pending


def test_a_link_dies_when_the_owners_address_changes(smtp, agent, addressed):
    prompt = ask(agent)
    link = choice_link(prompt)
    addressed.email = "elsewhere@example.com"
    addressed.save()

    response = Client().post(link, {"action": "answer"})

    assert response.status_code == 403 and fresh(prompt).is_pending


def test_an_old_link_has_expired(smtp, agent, addressed, monkeypatch):
    prompt = ask(agent)
    link = choice_link(prompt)
    monkeypatch.setattr(signed_links, "TOKEN_MARGIN", -signed_links.max_age())  # every link is now past its age

    response = Client().get(link)

    assert response.status_code == 410 and "This link has expired" in response.content.decode()


def test_a_resolved_prompts_link_only_says_how_it_was_resolved(smtp, agent, addressed):
    prompt = ask(agent)
    link = choice_link(prompt, "Staging (Recommended)")
    services.answer(prompt, {"deploy_target": "Production"}, by=addressed, surface="web")

    shown = Client().get(link)
    tried = Client().post(link, {"action": "answer"})

    assert shown.status_code == 200 and "Answered: Production — by alice on the web" in shown.content.decode()
    assert 'value="answer"' not in shown.content.decode()
    assert tried.status_code == 409 and fresh(prompt).result["answers"]["answers"] == {"deploy_target": ["Production"]}


def test_more_time_from_the_email_page_moves_the_deadline(smtp, agent, addressed, settings):
    prompt = ask(agent, QUESTION, EXTRAS)
    plain, _html = mail_of(prompt)
    [more_time] = links(plain)
    before = fresh(prompt).expires_at

    page = Client().get(more_time).content.decode()
    response = Client().post(more_time, {"action": "more_time"})

    assert "More time (+15 minutes)" in page and 'value="answer"' not in page
    assert response.status_code == 200 and "15 more minutes." in response.content.decode()
    assert fresh(prompt).expires_at == before + timedelta(seconds=settings.ASKUSER_EXTEND_SECONDS)
    event = PromptEvent.objects.get(prompt=prompt, kind="extended")
    assert (event.surface, event.actor) == ("email", "alice")
    assert fresh(prompt).is_pending


def test_more_time_past_the_limit_says_so(smtp, agent, addressed, settings):
    settings.ASKUSER_EXTEND_TIMES = 1
    prompt = ask(agent)
    [_staging, _production, more_time] = links(mail_of(prompt)[0])

    Client().post(more_time, {"action": "more_time"})
    again = Client().post(more_time, {"action": "more_time"})

    assert again.status_code == 409 and "No more time can be added to this question" in again.content.decode()
    assert fresh(prompt).extended == 1


def test_the_mail_and_its_page_speak_the_owners_language(smtp, agent, addressed):
    Preferences.objects.update_or_create(user=addressed, defaults={"language": "hi"})
    prompt = ask(agent)

    plain, html = mail_of(prompt)
    page = Client(headers={"accept-language": "en"}).get(links(plain)[1]).content.decode()

    with translation.override("hi"):
        in_hindi = email.deadline(prompt.expires_at)
    with translation.override("en"):
        assert email.deadline(prompt.expires_at) != in_hindi  # the dates are written differently
    assert '<html lang="hi">' in html
    # The deadline in the owner's language's format; the agent's text stays as written.
    for text in (plain, html, page):
        assert in_hindi in text and "Where should this release go first?" in text


# --- the settings page ----------------------------------------------------------------------------


def test_the_settings_page_shows_the_address_and_saves_a_choice(smtp, addressed):
    browser = Client()
    browser.force_login(addressed)

    page = browser.get("/settings/").content.decode()
    saved = browser.post("/settings/email/", {"email_after": "300"})
    again = browser.get("/settings/").content.decode()

    assert "Mail about questions goes to <strong>alice@example.com</strong>." in page
    assert '<option value="120" selected>After 2 minutes</option>' in page  # the default with SMTP
    assert [label for _, label in prefs_labels()] == [
        "Off",
        "After 1 minute",
        "After 2 minutes",
        "After 5 minutes",
        "After 15 minutes",
    ]
    assert saved.status_code == 302 and saved["Location"] == "/settings/"
    assert '<option value="300" selected>After 5 minutes</option>' in again
    assert prefs.email_after(addressed) == timedelta(minutes=5)


def prefs_labels():
    from askuser_app.delivery.channels.email.views import choice_label

    return [(seconds, choice_label(seconds)) for seconds in prefs.EMAIL_CHOICES]


def test_a_bad_choice_is_refused_with_a_clear_error(smtp, addressed):
    browser = Client()
    browser.force_login(addressed)

    for bad in ("7", "-60", "two", ""):
        response = browser.post("/settings/email/", {"email_after": bad}, headers={"HX-Request": "true"})
        assert response.status_code == 422
        assert "Choose Off or one of the delays listed." in response.content.decode()
    assert not Preferences.objects.filter(user=addressed).exists()


def test_htmx_saves_and_swaps_the_section(smtp, addressed):
    browser = Client()
    browser.force_login(addressed)

    response = browser.post("/settings/email/", {"email_after": "0"}, headers={"HX-Request": "true"})

    assert response.status_code == 200
    text = response.content.decode()
    assert text.strip().startswith('<section class="card settings-email" id="settings-email"') and "Saved." in text
    assert '<option value="0" selected>Off</option>' in text and prefs.email_after(addressed) is None


def test_without_an_address_the_page_says_how_to_get_one(settings, owner):
    settings.ASKUSER_EMAIL_SMTP = False
    browser = Client()
    browser.force_login(owner)

    page = browser.get("/settings/").content.decode()

    assert "Your account has no email address" in page
    assert "writes each mail to a file in its data folder" in page
    assert '<option value="0" selected>Off</option>' in page


def test_the_admin_and_the_result_say_by_email(smtp, agent, addressed, staff):
    prompt = ask(agent)
    Client().post(choice_link(prompt), {"action": "answer"})
    admin = Client()
    admin.force_login(staff)

    page = admin.get(f"/admin/askuser_app/prompt/{prompt.pk}/change/").content.decode()

    assert "by email" in page


def test_a_hindi_owners_mail_says_the_time_left_in_hindi(smtp, agent, addressed):
    Preferences.objects.update_or_create(user=addressed, defaults={"language": "hi"})

    plain, _html = mail_of(ask(agent))

    assert "14 मिनट" in plain and "14 minutes" not in plain


# --- the access log --------------------------------------------------------------------------------


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_real_servers_access_log_never_holds_a_mails_link(server_env, agent, addressed, tmp_path):
    prompt = ask(agent)
    token = email.make_token(prompt.pk, addressed, option=0)
    access = tmp_path / "access.log"
    server = DaphneServer(server_env, command=(*SERVE, "--access-log", str(access))).start()
    try:
        page = httpx.get(f"{server.url}/chat/email/{token}/")
        more = httpx.get(f"{server.url}/chat/email/{token}/?from=mail&t={token}")
    finally:
        server.stop()

    assert page.status_code == more.status_code == 200
    assert "Where should this release go first?" in page.text  # the link worked
    log = access.read_text()
    assert log.count('"GET /chat/email/[redacted]/') == 2, log  # both requests are logged…
    for part in token.split(":"):
        assert part not in log  # …and no piece of the link's token
