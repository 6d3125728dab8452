"""The Control UI in the person's language: how it is chosen, what it translates, and the catalogue's CI check.

The catalogue checks (the end of this file) are what CI relies on: every string
the code marks is in askuser_app/locale, translated, not fuzzy, with the same
placeholders, and the committed .mo files say what the .po files say.
"""

from __future__ import annotations

import ast
import gettext
import re
import shutil
from pathlib import Path

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.utils import translation

from askuser_app.delivery import engine
from askuser_app.delivery.channels.base import Sender
from askuser_app.delivery.channels.chats import core
from askuser_app.domain import contract, services
from askuser_app.management.commands import updatemessages
from askuser_app.models import Preferences, Prompt
from askuser_app.runtime import i18n
from askuser_app.runtime.asyncdb import database_call
from controlui.asgi import application
from tests.conftest import EXTRAS, log_in, payload

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = ROOT / "askuser_app" / "locale"
DEADLINE = 10
ALICE = Sender("telegram", "4242", chat_id="4242", handle="@alice")


@pytest.fixture(autouse=True)
def english_again():
    """A request through the test client leaves its language active on this thread: not for the next test."""
    yield
    translation.activate(settings.LANGUAGE_CODE)


def html_lang(response) -> str:
    found = re.search(r'<html lang="([^"]+)" dir="(ltr|rtl)">', response.content.decode())
    assert found, "the page has no <html lang dir>"
    return found[1]


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def ask(agent, *questions, session: str = "support-42") -> Prompt:
    return services.ask(agent, contract.parse_create(payload(*questions, session=session))).prompt


def prefer(user, language: str) -> None:
    Preferences.objects.update_or_create(user=user, defaults={"language": language})


# --- which language ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_page_is_in_hindi_when_the_browser_asks_for_it():
    response = Client().get("/login/", headers={"Accept-Language": "hi-IN,hi;q=0.9,en;q=0.5"})

    assert html_lang(response) == "hi" and response.headers["Content-Language"] == "hi"
    assert "लॉग इन करें" in response.content.decode() and "उपयोगकर्ता नाम" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("accept", ["", "en-GB,en;q=0.8", "fr-FR,fr;q=0.9", "xx"])
def test_english_stays_the_default(accept):
    response = Client().get("/login/", headers={"Accept-Language": accept} if accept else {})

    assert html_lang(response) == "en" and "Log in" in response.content.decode()


def test_the_persons_setting_beats_the_browsers_language(owner):
    client = logged_in(owner)
    prefer(owner, "hi")

    hindi = client.get("/", headers={"Accept-Language": "en"})
    prefer(owner, "en")
    english = client.get("/", headers={"Accept-Language": "hi"})
    prefer(owner, "")  # no choice: the browser's again
    browsers = client.get("/", headers={"Accept-Language": "hi"})

    assert html_lang(hindi) == "hi" and "<h1>सत्र</h1>" in hindi.content.decode()
    assert html_lang(english) == "en" and "<h1>Sessions</h1>" in english.content.decode()
    assert html_lang(browsers) == "hi"


def test_the_agent_api_stays_english_whatever_the_person_chose(owner, api):
    prefer(owner, "hi")

    login = f"sessionid={log_in(owner)}"  # even with the person's login beside the token
    refused = api.ask(payload(session="bad key!"), headers={"Accept-Language": "hi", "Cookie": login})

    assert refused.status_code == 422 and refused.json()["error"] == "invalid_request"
    assert re.fullmatch(r"[\x00-\x7f]*", refused.content.decode()), "an agent error in English"


# --- the switcher --------------------------------------------------------------------------------


def test_every_page_has_the_switcher_as_a_form_that_works_without_javascript(owner):
    pages = [Client().get("/login/"), logged_in(owner).get("/"), logged_in(owner).get("/settings/")]

    for page in pages:
        html = page.content.decode()
        assert '<form class="language-switcher" method="post" action="/language/">' in html
        assert '<option value="hi" lang="hi">हिन्दी</option>' in html
        assert 'class="link no-js-only">Change language</button>' in html  # the submit a page without JS uses


def test_choosing_a_language_keeps_it_for_the_person_and_goes_back(owner):
    client = logged_in(owner)

    response = client.post("/language/", {"language": "hi", "next": "/settings/?tab=1"})

    assert response.status_code == 302 and response.url == "/settings/?tab=1"
    assert Preferences.objects.get(user=owner).language == "hi"
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == "hi"
    # Another device, whose browser asks for English, follows the person's choice.
    elsewhere = logged_in(owner).get("/settings/", headers={"Accept-Language": "en"})
    assert html_lang(elsewhere) == "hi" and "सेटिंग्स" in elsewhere.content.decode()


def test_before_the_login_the_choice_is_kept_in_a_cookie():
    client = Client()

    response = client.post("/language/", {"language": "hi", "next": "/login/?next=/s/x/"})
    page = client.get("/login/", headers={"Accept-Language": "en"})

    assert response.status_code == 302 and response.url == "/login/?next=/s/x/"
    cookie = client.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "hi" and cookie["httponly"] and cookie["samesite"] == "Lax"
    assert html_lang(page) == "hi"


@pytest.mark.parametrize("next_url", ["https://evil.example/", "//evil.example/x", "javascript:alert(1)", ""])
@pytest.mark.django_db
def test_the_switcher_never_sends_the_person_to_another_site(next_url):
    response = Client().post("/language/", {"language": "hi", "next": next_url})

    assert response.status_code == 302 and response.url == "/"


def test_the_browsers_language_again_forgets_the_choice(owner):
    client = logged_in(owner)
    client.post("/language/", {"language": "hi", "next": "/"})

    client.post("/language/", {"language": "", "next": "/"})
    page = client.get("/", headers={"Accept-Language": "en"})

    assert Preferences.objects.get(user=owner).language == ""
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == ""  # deleted
    assert html_lang(page) == "en"


def test_a_language_askuser_does_not_speak_changes_nothing(owner):
    prefer(owner, "hi")

    response = logged_in(owner).post("/language/", {"language": "fr", "next": "/"})

    assert response.status_code == 302 and Preferences.objects.get(user=owner).language == "hi"


def test_the_switcher_is_a_post(owner):
    assert logged_in(owner).get("/language/").status_code == 405


def test_the_settings_page_offers_the_languages_with_the_persons_choice_checked(owner):
    prefer(owner, "hi")

    html = logged_in(owner).get("/settings/").content.decode()

    assert 'id="settings-language">भाषा</h2>' in html
    assert '<input type="radio" name="language" value="hi" checked>' in html
    assert '<input type="radio" name="language" value="">' in html  # the browser's language, not chosen


# --- what is translated --------------------------------------------------------------------------


def test_the_session_page_panel_and_composer_are_in_hindi_and_the_agents_words_as_written(owner, agent):
    prefer(owner, "hi")
    ask(agent, EXTRAS)

    html = logged_in(owner).get("/s/support-42/").content.decode()

    for words in ["एजेंट को संदेश लिखें…", "भेजें", "सभी छोड़ें", "जमा करें", "अन्य", "शेष", "1 में से प्रश्न 1"]:
        assert words in html, words
    assert "जितने लागू हों, उतने चुनें, या अपना उत्तर लिखें।" in html
    assert "Which extras should ship with it?" in html  # the agent's question, as written
    assert "&amp;lang=hi" in html  # the live socket renders its pushes in the page's language


def test_the_inbox_is_in_hindi_and_the_agents_words_as_written(owner, agent):
    prefer(owner, "hi")
    ask(agent, session="one")
    ask(agent, EXTRAS, session="two")

    html = logged_in(owner).get("/inbox/").content.decode()

    for words in ["इनबॉक्स", "आपके उत्तर की प्रतीक्षा में", "अभी उत्तर दिए गए", "इनबॉक्स खोलें", "सभी छोड़ें", "जमा करें"]:
        assert words in html, words
    assert "Which extras should ship with it?" in html  # the agent's question, as written
    assert "only=inbox&amp;since=" in html and "&amp;lang=hi" in html  # its pushes in the page's language


def test_the_javascript_catalogue_is_served_in_the_pages_language(owner):
    prefer(owner, "hi")

    script = logged_in(owner).get("/jsi18n/")

    assert script.status_code == 200 and script["Content-Type"].startswith("text/javascript")
    assert '"%(time)s left": "%(time)s \\u0936\\u0947\\u0937"' in script.content.decode()  # "शेष"


def test_the_404_and_locked_out_pages_are_in_hindi():
    client = Client(headers={"Accept-Language": "hi"})

    assert "नहीं मिला" in client.get("/nothing-here/").content.decode()


def test_a_panel_option_picked_with_a_devanagari_digit_is_that_option(owner, agent):
    prompt = ask(agent)

    response = logged_in(owner).post(f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target": "१"})

    assert response.status_code == 302
    answered = Prompt.objects.get(pk=prompt.pk)
    assert answered.status == "answered" and answered.result["answers"]["answers"]["deploy_target"] == ["Production"]


def test_a_refused_panel_form_says_so_in_the_persons_language(owner, agent):
    prefer(owner, "hi")
    prompt = ask(agent)

    response = logged_in(owner).post(f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target": "١"})

    assert response.status_code == 422 and "इसके विकल्पों में से नहीं है" in response.content.decode()


@pytest.mark.django_db(transaction=True)
async def test_the_live_socket_pushes_in_the_pages_language(owner, agent):
    await database_call(prefer)(owner, "hi")
    client = await database_call(logged_in)(owner)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie.encode())]
    socket = WebsocketCommunicator(application, "/ws/sessions/?lang=hi", headers=headers)
    connected, _ = await socket.connect(timeout=DEADLINE)
    assert connected
    try:
        await socket.receive_from(timeout=DEADLINE)  # the list as of joining
        await database_call(ask)(agent)
        pushed = await socket.receive_from(timeout=DEADLINE)
    finally:
        await socket.disconnect()

    assert "शेष" in pushed and "के साथ" in pushed  # "… left", "with …"


# --- chat apps: the owner's language --------------------------------------------------------------


@pytest.fixture
def chat_on(settings, owner):
    settings.TELEGRAM_BOT_TOKEN = "123:test"
    return core.link_by_hand(owner, "telegram", ALICE.user_id, handle=ALICE.handle)


def test_a_chat_message_is_written_in_its_owners_language(chat_on, owner, other_user, agent):
    prefer(owner, "hi")
    ask(agent)
    ask(agent, EXTRAS, session="support-43")

    before = translation.get_language()
    claimed = sorted(engine.claim_due(8), key=lambda c: len(c.card.questions[0].options))

    assert [c.language for c in claimed] == ["hi", "hi"]
    single, several = (c.card for c in claimed)
    assert [b.label for b in single.buttons][-2:] == ["अन्य…", "छोड़ें"]
    assert several.answer_button.label == "उत्तर दें…" and "(एक या अधिक चुनें)" in several.text
    assert "Which extras should ship with it?" in several.text
    assert translation.get_language() == before  # claiming left the loop's language alone


def test_a_chat_message_to_a_person_who_never_chose_is_in_english(chat_on, agent):
    ask(agent)

    [claimed] = engine.claim_due(8)

    assert claimed.language == "en" and claimed.card.buttons[-1].label == "Skip"


def test_a_reply_in_a_chat_is_answered_in_the_linked_persons_language(chat_on, owner, agent):
    prefer(owner, "hi")

    nothing = core.reply(ALICE, "1")
    prompt = ask(agent)
    answered = core.reply(ALICE, "२")

    assert nothing.text == "अभी कोई प्रश्न आपके उत्तर की प्रतीक्षा में नहीं है।"
    assert answered.recorded and answered.text.startswith("उत्तर: Production — ")
    assert Prompt.objects.get(pk=prompt.pk).result["answers"]["answers"]["deploy_target"] == ["Production"]


def test_a_chat_reply_with_the_hindi_words_for_skip_all_skips_the_prompt(chat_on, owner, agent):
    prompt = ask(agent, EXTRAS)

    core.reply(ALICE, "सभी छोड़ें")

    assert Prompt.objects.get(pk=prompt.pk).reason == "skipped"


def test_the_owners_language_is_their_choice_else_english(owner):
    assert i18n.of_owner(owner.pk) == "en" and i18n.of_owner(None) == "en"
    prefer(owner, "hi")
    assert i18n.of_owner(owner.pk) == "hi"
    prefer(owner, "xx")  # a language no longer offered
    assert i18n.of_owner(owner.pk) == "en"


def test_a_choice_changed_or_removed_by_any_path_is_followed(owner):
    i18n.choose(owner, "hi")
    assert i18n.of_owner(owner.pk) == "hi"
    preferences = Preferences.objects.get(user=owner)
    preferences.language = ""  # saved by another path than the switcher (the admin, a shell)
    preferences.save()
    assert i18n.of_owner(owner.pk) == "en"
    i18n.choose(owner, "hi")
    Preferences.objects.filter(user=owner).delete()
    assert i18n.of_owner(owner.pk) == "en"
    i18n.choose(owner, "hi")
    owner_id = owner.pk
    owner.delete()  # the preferences go with the person
    assert i18n.of_owner(owner_id) == "en"


# --- the catalogue: what CI checks ----------------------------------------------------------------

PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]|\{\{.*?\}\}|\{\w*\}")


def read_po(path: Path) -> list[dict]:
    """The entries of a .po file (enough of the format for makemessages' output)."""
    entries = []
    for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8").strip()):
        entry: dict = {"flags": [], "msgctxt": None, "msgid_plural": None, "msgstr": {}}
        field, index = "", 0
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] += [flag.strip() for flag in line[2:].split(",")]
            elif line.startswith("#"):
                continue
            elif line.startswith('"'):
                if field == "msgstr":
                    entry["msgstr"][index] += ast.literal_eval(line)
                else:
                    entry[field] += ast.literal_eval(line)
            else:
                key, value = line.split(" ", 1)
                plural = re.fullmatch(r"msgstr\[(\d)\]", key)
                if plural or key == "msgstr":
                    field, index = "msgstr", int(plural[1]) if plural else 0
                    entry["msgstr"][index] = ast.literal_eval(value)
                else:
                    field = key
                    entry[key] = ast.literal_eval(value)
        entries.append(entry)
    return [e for e in entries if e["msgid"]]  # without the header


def catalogues() -> list[Path]:
    found = sorted(CATALOGUES.glob("*/LC_MESSAGES/*.po"))
    assert found, "no catalogue in askuser_app/locale"
    return found


def ids(entries: list[dict]) -> set[tuple]:
    return {(e["msgctxt"], e["msgid"], e["msgid_plural"]) for e in entries}


def test_every_language_but_english_has_both_catalogues():
    for language in updatemessages.languages():
        for domain in updatemessages.DOMAINS:
            assert (CATALOGUES / language / "LC_MESSAGES" / f"{domain}.po").exists(), (language, domain)


@pytest.mark.parametrize("po", catalogues(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_the_catalogue_has_no_untranslated_or_fuzzy_entry(po):
    entries = read_po(po)

    fuzzy = [e["msgid"] for e in entries if "fuzzy" in e["flags"]]
    untranslated = [e["msgid"] for e in entries if not all(e["msgstr"].values())]
    plural_forms = [e["msgid"] for e in entries if e["msgid_plural"] is not None and len(e["msgstr"]) != 2]

    assert fuzzy == [] and untranslated == [] and plural_forms == []
    assert '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"' in po.read_text(encoding="utf-8")


@pytest.mark.parametrize("po", catalogues(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_translation_keeps_the_placeholders_of_its_message(po):
    wrong = []
    for entry in read_po(po):
        for index, translated in entry["msgstr"].items():
            source = entry["msgid_plural"] if index and entry["msgid_plural"] else entry["msgid"]
            if sorted(PLACEHOLDER.findall(source)) != sorted(PLACEHOLDER.findall(translated)):
                wrong.append((entry["msgid"], translated))

    assert wrong == []


@pytest.mark.parametrize("po", catalogues(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_the_committed_mo_is_compiled_from_the_committed_po(po):
    with po.with_suffix(".mo").open("rb") as compiled:
        mo = gettext.GNUTranslations(compiled)

    stale = []
    for entry in read_po(po):
        context, message, plural, said = entry["msgctxt"], entry["msgid"], entry["msgid_plural"], entry["msgstr"]
        if plural is not None:
            read = [
                mo.npgettext(context, message, plural, n) if context else mo.ngettext(message, plural, n)
                for n in (1, 2)
            ]
            expected = [said[0], said[1]]
        else:
            read = [mo.pgettext(context, message) if context else mo.gettext(message)]
            expected = [said[0]]
        if read != expected:
            stale.append(message)

    assert stale == [], "run `make messages` (or manage.py updatemessages --compile-only) and commit the .mo"


@pytest.fixture
def catalogue_from_the_code(tmp_path, settings, monkeypatch):
    """makemessages run on a copy of the code and the committed catalogues, as `make messages` runs it."""
    if shutil.which("xgettext") is None or shutil.which("msgmerge") is None:
        pytest.skip("GNU gettext (xgettext, msgmerge) is not installed: apt-get install gettext; .ci/run installs it")
    copy = tmp_path / "askuser"
    for name in ("askuser_app", "templates", "static"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
    settings.LOCALE_PATHS = [copy / "askuser_app" / "locale"]
    monkeypatch.chdir(copy)
    updatemessages.make()
    return copy / "askuser_app" / "locale"


def test_every_string_the_code_marks_is_in_the_catalogue_and_nothing_else(catalogue_from_the_code):
    for po in catalogues():
        fresh = catalogue_from_the_code / po.relative_to(CATALOGUES)

        added = ids(read_po(fresh)) - ids(read_po(po))
        gone = ids(read_po(po)) - ids(read_po(fresh))

        assert (added, gone) == (set(), set()), f"{po}: run `make messages`, translate, and run it again"


def test_a_refused_answer_or_message_is_told_in_the_persons_language(owner, agent):
    prefer(owner, "hi")
    prompt = ask(agent)
    client = logged_in(owner)
    htmx = {"HX-Request": "true"}

    blank = client.post("/s/support-42/messages", {"text": "   "}, headers=htmx)
    odd = client.post(
        f"/s/support-42/prompts/{prompt.pk}/answer", {"q-deploy_target-other": "bad\x00byte"}, headers=htmx
    )

    assert blank.status_code == 422 and "पहले कुछ लिखें।" in blank.content.decode()
    assert odd.status_code == 422 and "Deploy: आपके उत्तर में नियंत्रण वर्ण" in odd.content.decode()
    assert Prompt.objects.get(pk=prompt.pk).is_pending


def test_the_agent_hears_a_refused_answer_in_english_whatever_the_person_chose(owner, agent):
    prefer(owner, "hi")
    prompt = ask(agent)

    with translation.override("hi"), pytest.raises(services.InvalidAnswer) as refused:
        services.answer(prompt, {"deploy_target": "bad\x00byte"}, by=None, surface="api")

    assert refused.value.message == "deploy_target: your answer contains control characters."
    assert refused.value.for_person == "Deploy: आपके उत्तर में नियंत्रण वर्ण (control characters) हैं।"
