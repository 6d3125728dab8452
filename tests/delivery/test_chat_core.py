"""The channel-neutral chat core: a prompt as a chat message, taps and replies read into answers
through services, linking by one-time code, and the delivery engine's state machine for messages."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from askuser_app.delivery import engine, messages
from askuser_app.delivery.channels.base import Action, Sender, encode
from askuser_app.delivery.channels.chats import core
from askuser_app.delivery.engine import Outcome, Tried
from askuser_app.domain import contract, services, textreply
from askuser_app.models import ChatLink, Delivery, DeliveryAttempt, LinkCode, Prompt, SeenEvent
from tests.conftest import EXTRAS, QUESTION, payload

pytestmark = pytest.mark.django_db

ALICE = Sender("telegram", "4242", chat_id="4242", handle="@alice")
STRANGER = Sender("telegram", "666", chat_id="666", handle="@mallory")


@pytest.fixture
def linked(owner):
    return core.link_by_hand(owner, "telegram", ALICE.user_id, handle=ALICE.handle)


def ask(agent, *questions, session: str = "support-42") -> Prompt:
    return services.ask(agent, contract.parse_create(payload(*questions, session=session))).prompt


def tap(prompt: Prompt, verb: str, index: int | None = None, sender: Sender = ALICE):
    return core.tap(sender, encode(Action(verb, prompt.pk, index)))  # type: ignore[arg-type]


def fresh(prompt: Prompt) -> Prompt:
    return Prompt.objects.get(pk=prompt.pk)


# --- rendering -----------------------------------------------------------------------------


def test_a_single_choice_prompt_is_one_message_with_a_button_per_option_then_other_and_skip(agent, settings):
    settings.ASKUSER_PUBLIC_URL = "https://askuser.example.com"
    prompt = ask(agent)

    card = core.card(prompt)

    assert card.by_buttons and card.header == "Deploy" and card.agent == "helper"
    assert (
        card.text == "Where should this release go first?\n\n• Staging (Recommended) — Safe, reversible\n• Production"
    )
    assert [b.label for b in card.buttons] == ["Staging (Recommended)", "Production", "Other…", "Skip"]
    assert [b.data for b in card.buttons] == [
        f"o:{prompt.pk.hex}:0",
        f"o:{prompt.pk.hex}:1",
        f"x:{prompt.pk.hex}",
        f"s:{prompt.pk.hex}",
    ]
    assert all(len(b.data.encode()) <= 64 for b in card.buttons)
    assert card.url == f"https://askuser.example.com/p/{prompt.pk}/"
    assert card.answer_button is None


def test_any_other_prompt_is_the_text_rendering_answered_by_a_reply(agent):
    prompt = ask(agent, QUESTION, EXTRAS)

    card = core.card(prompt)

    questions = [textreply.TextQuestion.of(q) for q in prompt.questions.all()]
    assert not card.by_buttons and card.header == "helper asks"
    assert card.text == textreply.render_prompt(questions)
    assert [b.label for b in card.buttons] == ["Skip all"]
    assert card.answer_button is not None and card.answer_button.data == f"t:{prompt.pk.hex}"
    assert [q.key for q in card.questions] == ["deploy_target", "extras"]


def test_the_closed_message_keeps_what_was_asked_without_reply_guidance(agent, owner):
    prompt = ask(agent, QUESTION, EXTRAS)
    services.skip_all(prompt, by=owner, surface="web")

    closed = core.closed(fresh(prompt))

    assert "Reply with" not in closed.text and "Where should this release go first?" in closed.text
    assert closed.header == "helper asks" and closed.outcome == "Skipped on the web by alice"


@pytest.mark.parametrize(
    ("resolve", "line"),
    [
        (lambda p, u, a: services.answer(p, {"deploy_target": "Production"}, by=u, surface="telegram"),
         "Answered: Production — by alice on Telegram"),
        (lambda p, u, a: services.answer(p, {"deploy_target": "my secret plan"}, by=u, surface="slack"),
         "Answered: own answer — by alice on Slack"),
        (lambda p, u, a: services.answer(p, {"deploy_target": "Production"}, by=u, surface="web"),
         "Answered: Production — by alice on the web"),
        (lambda p, u, a: services.skip_all(p, by=u, surface="discord"), "Skipped on Discord by alice"),
        (lambda p, u, a: services.cancel(p, agent=a), "Cancelled by the agent"),
        (lambda p, u, a: services.abort_run(a, p.run.run_id), "Cancelled: the agent's run was aborted"),
    ],
)  # fmt: skip
def test_the_outcome_line_says_what_happened_and_never_echoes_own_words(agent, owner, resolve, line):
    prompt = ask(agent)
    resolve(prompt, owner, agent)

    assert core.closed(fresh(prompt)).outcome == line


def test_an_expired_prompt_says_so(agent):
    prompt = ask(agent)
    Prompt.objects.filter(pk=prompt.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    services.expire_due()

    assert core.closed(fresh(prompt)).outcome == "Expired: no answer before the deadline"


def test_several_answers_name_their_questions(agent, owner):
    prompt = ask(agent, QUESTION, EXTRAS)
    services.answer(prompt, {"deploy_target": "Production", "extras": ["Docs", "a poem"]}, by=owner, surface="telegram")

    assert (
        core.closed(fresh(prompt)).outcome
        == "Answered: Deploy: Production; Extras: Docs, own answer — by alice on Telegram"
    )


# --- taps ------------------------------------------------------------------------------------


def test_a_tap_answers_at_once_with_the_channel_as_surface_and_the_linked_user(agent, owner, linked):
    prompt = ask(agent)

    reply = tap(prompt, "option", 1)

    prompt = fresh(prompt)
    assert reply.recorded and reply.text == "Answered: Production — by alice on Telegram"
    assert reply.closed is not None and reply.closed.outcome == reply.text
    assert (prompt.status, prompt.surface, prompt.resolved_by) == ("answered", "telegram", owner)
    assert prompt.result["answers"] == {"answers": {"deploy_target": ["Production"]}}
    assert prompt.result["resolved_by"] == "alice" and prompt.result["surface"] == "telegram"
    assert list(prompt.events.values_list("kind", "surface", "actor")) == [
        ("created", "api", "agent helper"),
        ("answered", "telegram", "alice"),
    ]


def test_a_strangers_tap_is_told_the_question_is_not_theirs_and_nothing_changes(agent, other_user, linked):
    core.link_by_hand(other_user, "telegram", STRANGER.user_id)
    prompt = ask(agent)

    for sender in (STRANGER, Sender("telegram", "999")):  # linked to someone else, and not linked at all
        reply = tap(prompt, "option", 0, sender=sender)
        assert (reply.text, reply.recorded) == ("This question is not yours.", False)

    assert fresh(prompt).is_pending and fresh(prompt).events.count() == 1


def test_the_same_user_id_on_another_channel_is_a_stranger(agent, linked):
    prompt = ask(agent)

    reply = tap(prompt, "skip", sender=Sender("slack", ALICE.user_id))

    assert reply.text == "This question is not yours." and fresh(prompt).is_pending


def test_a_stale_tap_after_a_web_answer_gets_a_notice_and_no_second_answer(agent, owner, linked):
    prompt = ask(agent)
    services.answer(prompt, {"deploy_target": "Staging (Recommended)"}, by=owner, surface="web")

    reply = tap(prompt, "option", 1)

    assert not reply.recorded
    assert reply.text.startswith("This prompt was already answered on the web by alice at ")
    assert reply.closed is not None and reply.closed.outcome == "Answered: Staging (Recommended) — by alice on the web"
    assert fresh(prompt).result["answers"] == {"answers": {"deploy_target": ["Staging (Recommended)"]}}
    assert fresh(prompt).events.filter(kind="answered").count() == 1


def test_skip_skips_every_question(agent, owner, linked):
    prompt = ask(agent, QUESTION, EXTRAS)

    reply = tap(prompt, "skip")

    prompt = fresh(prompt)
    assert reply.recorded and reply.text == "Skipped on Telegram by alice"
    assert (prompt.status, prompt.reason, prompt.surface) == ("no_answer", "skipped", "telegram")


def test_other_asks_for_own_words_which_answer_as_free_text(agent, owner, linked):
    prompt = ask(agent)

    asked = tap(prompt, "other")
    assert not asked.recorded and asked.ask_own_words is not None and asked.ask_own_words.key == "deploy_target"
    assert fresh(prompt).is_pending

    reply = core.own_words(ALICE, prompt.pk, "  canary first  ")

    details = fresh(prompt).result["details"]["deploy_target"]
    assert reply.recorded and reply.text == "Answered: own answer — by alice on Telegram"
    assert fresh(prompt).result["answers"] == {"answers": {"deploy_target": ["canary first"]}}
    assert details["free_text"] == "canary first" and details["options"] == []


def test_answer_opens_one_text_input_per_question_and_reads_them_as_a_reply_does(agent, owner, linked):
    prompt = ask(agent, QUESTION, EXTRAS)

    asked = tap(prompt, "answer")
    reply = core.answers(ALICE, prompt.pk, {"deploy_target": "2", "extras": "Docs, Changelog"})

    assert [q.key for q in asked.ask_answers] == ["deploy_target", "extras"]
    assert reply.recorded
    assert fresh(prompt).result["answers"] == {
        "answers": {"deploy_target": ["Production"], "extras": ["Docs", "Changelog"]}
    }


def test_forged_and_out_of_range_buttons_change_nothing(agent, linked):
    prompt = ask(agent)

    for data in ("o:nothex:1", f"o:{prompt.pk.hex}:7", f"o:{prompt.pk.hex}:-1", "", "z" * 200):
        assert core.tap(ALICE, data).text == "This button is no longer valid."
    assert fresh(prompt).is_pending


# --- replies -----------------------------------------------------------------------------------


def test_a_multi_question_reply_answers_the_senders_oldest_pending_prompt(agent, owner, linked):
    first = ask(agent, QUESTION, EXTRAS)
    later = ask(agent, session="support-43")

    reply = core.reply(ALICE, "deploy_target: 1\nextras: Docs; Blog post")

    assert reply.recorded and reply.prompt_id == first.pk
    assert fresh(first).result["answers"] == {
        "answers": {"deploy_target": ["Staging (Recommended)"], "extras": ["Docs", "Blog post"]}
    }
    event = fresh(first).events.get(kind="answered")
    assert event.surface == "telegram" and event.detail["read_as"] == [
        "Deploy: Staging (Recommended)",
        "Extras: Docs, Blog post",
    ]
    assert fresh(later).is_pending


def test_an_unreadable_reply_leaves_the_prompt_pending_and_says_what_is_missing(agent, linked):
    prompt = ask(agent, QUESTION, EXTRAS)

    reply = core.reply(ALICE, "extras: Docs", prompt_id=prompt.pk)

    assert not reply.recorded
    assert reply.text.startswith("Your reply did not answer 1. Deploy.")
    assert fresh(prompt).is_pending


def test_a_strangers_reply_to_a_prompt_changes_nothing(agent, other_user, linked):
    core.link_by_hand(other_user, "telegram", STRANGER.user_id)
    prompt = ask(agent)

    assert core.reply(STRANGER, "2", prompt_id=prompt.pk).text == "This question is not yours."
    assert fresh(prompt).is_pending


def test_a_reply_with_nothing_pending_says_so(linked):
    assert core.reply(ALICE, "Production").text == "Nothing is waiting for your answer right now."


def test_a_message_from_an_unlinked_chat_says_how_to_link(agent):
    ask(agent)

    assert "not linked" in core.reply(STRANGER, "Production").text


def test_an_unlinked_chat_is_told_once_in_a_while_not_once_per_message(agent):
    ask(agent)
    other = Sender("telegram", "667", chat_id="667")

    first, again = core.reply(STRANGER, "hello?"), core.reply(STRANGER, "hello??")

    assert "not linked" in first.text
    assert again.text == ""  # nothing to send
    assert "not linked" in core.reply(other, "hi").text  # another chat is told its own once


# --- linking -------------------------------------------------------------------------------------


def test_a_link_code_links_the_sender_once(owner):
    code = core.new_code(owner, "telegram")

    first = core.link(ALICE, code.lower())
    again = core.link(Sender("telegram", "777"), code)

    assert len(code) == 8 and set(code) <= set(core.CODE_ALPHABET)
    assert first.recorded and first.text == "Linked to askuser as alice: questions for you will arrive here."
    assert not again.recorded and again.text.startswith("This code is not valid or has expired.")
    link = ChatLink.objects.get()
    assert (link.user, link.channel, link.external_id, link.chat_id, link.handle) == (
        owner,
        "telegram",
        "4242",
        "4242",
        "@alice",
    )


def test_an_expired_code_or_one_for_another_channel_links_nothing(owner):
    expired = core.new_code(owner, "telegram")
    LinkCode.objects.filter(code=expired).update(expires_at=timezone.now() - timedelta(seconds=1))
    slack_code = core.new_code(owner, "slack")

    assert not core.link(ALICE, expired).recorded
    assert not core.link(ALICE, slack_code).recorded
    assert not ChatLink.objects.exists()


def test_a_new_code_replaces_the_users_unused_one(owner):
    old = core.new_code(owner, "telegram")
    new = core.new_code(owner, "telegram")

    assert not core.link(ALICE, old).recorded and core.link(ALICE, new).recorded


def test_a_code_sent_as_a_plain_message_links(owner):
    code = core.new_code(owner, "telegram")

    assert core.reply(ALICE, f" {code} ").recorded
    assert ChatLink.objects.filter(user=owner, external_id="4242").exists()


def test_linking_again_replaces_the_users_earlier_identity_on_that_channel(owner, linked):
    core.link(Sender("telegram", "5555"), core.new_code(owner, "telegram"))

    assert list(ChatLink.objects.values_list("external_id", flat=True)) == ["5555"]


def test_unlink_forgets_the_identity(agent, linked):
    prompt = ask(agent)

    assert core.unlink(ALICE).recorded and not core.unlink(ALICE).recorded
    assert tap(prompt, "option", 0).text == "This question is not yours."


def test_an_event_is_seen_once_per_channel():
    assert not core.seen("telegram", "1") and core.seen("telegram", "1")
    assert not core.seen("slack", "1")
    SeenEvent.objects.update(at=timezone.now() - timedelta(days=2))
    assert core.prune_seen() == 2 and not core.seen("telegram", "1")


# --- the messages' deliveries ------------------------------------------------------------------------------------


@pytest.fixture
def chat_on(settings):
    settings.TELEGRAM_BOT_TOKEN = "123:test"
    return settings


def test_nothing_is_recorded_while_no_chat_app_is_set_up(agent, owner, linked):
    prompt = ask(agent)
    services.answer(prompt, {"deploy_target": "Production"}, by=owner)

    assert not Delivery.objects.exists()


def test_a_prompt_records_one_message_per_linked_identity_of_its_owner(chat_on, agent, owner, other_user, linked):
    core.link_by_hand(other_user, "telegram", STRANGER.user_id)
    prompt = ask(agent)

    [message] = Delivery.objects.all()
    assert (message.prompt_id, message.link, message.address, message.state) == (prompt.pk, linked, "4242", "to_send")


def test_a_resolution_marks_sent_messages_for_an_edit_and_drops_unsent_ones(chat_on, agent, owner, linked):
    prompt = ask(agent)
    Delivery.objects.update(state="sent", ref={"chat_id": 4242, "message_id": 7})
    other = ask(agent, session="support-43")

    services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
    services.cancel(other, agent=agent)

    assert Delivery.objects.get(prompt=prompt).state == "to_edit"
    assert Delivery.objects.get(prompt=other).state == "dropped"


def claim_one() -> messages.Claimed:
    [claimed] = engine.claim_due(8)
    return claimed


def record(claimed: messages.Claimed, **outcome) -> Delivery:
    engine.record(claimed, Tried(Outcome(**outcome), timezone.now(), 5))
    return Delivery.objects.get(pk=claimed.row_id)


def test_a_claimed_try_is_not_claimed_again_until_its_lease_runs_out(chat_on, agent, linked):
    ask(agent)

    claimed = claim_one()

    assert claimed.action == "send" and claimed.card is not None and claimed.address == "4242"
    assert engine.claim_due(8) == []


def test_a_send_that_lands_after_the_prompt_resolved_asks_for_the_edit(chat_on, agent, owner, linked):
    prompt = ask(agent)
    claimed = claim_one()
    services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")  # while the send is in flight

    row = record(claimed, ok=True, ref={"chat_id": 4242, "message_id": 9})

    assert (row.state, row.ref, row.attempts) == ("to_edit", {"chat_id": 4242, "message_id": 9}, 0)
    edit = claim_one()
    assert edit.action == "edit" and edit.ref == {"chat_id": 4242, "message_id": 9}
    assert edit.closed is not None and edit.closed.outcome == "Answered: Production — by alice on the web"
    assert record(edit, ok=True).state == "closed"


def test_a_card_whose_send_died_with_its_process_is_closed_by_a_follow_up_once_resolved(chat_on, agent, owner, linked):
    prompt = ask(agent)
    claim_one()  # the send is made, and its process killed before it records anything
    services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
    assert Delivery.objects.get().state == "maybe_sent"  # not dropped: the card may be in the chat
    assert engine.claim_due(8) == []  # nor told before the send's lease runs out: it may still land

    Delivery.objects.update(next_attempt_at=timezone.now())  # the lease ran out
    told = claim_one()

    assert told.action == "tell" and told.address == "4242" and told.news is not None
    assert told.news.text == "Deploy: Answered: Production — by alice on the web"
    assert told.news.url.endswith(f"/p/{prompt.pk}/") and told.news.tag == f"askuser-{prompt.pk}"
    assert record(told, ok=True, answered=True).state == "closed"


def test_a_send_refused_by_the_platform_while_its_prompt_resolved_is_dropped(chat_on, agent, owner, linked):
    prompt = ask(agent)
    claimed = claim_one()
    services.cancel(prompt, agent=agent)

    row = record(claimed, ok=False, error="Forbidden: bot was blocked by the user", final=True, answered=True)

    assert row.state == "dropped" and engine.claim_due(8) == []


def test_temporary_failures_retry_later_honouring_retry_after_and_permanent_ones_fail(chat_on, agent, linked):
    ask(agent)
    before = timezone.now()

    row = record(claim_one(), ok=False, error="Telegram asks to wait", retry_after=30.0)

    assert row.state == "to_send" and row.next_attempt_at >= before + timedelta(seconds=30)
    Delivery.objects.update(next_attempt_at=timezone.now())
    row = record(claim_one(), ok=False, error="Forbidden: bot was blocked by the user", final=True)
    assert (row.state, row.last_error, row.attempts) == ("failed", "Forbidden: bot was blocked by the user", 2)
    assert list(DeliveryAttempt.objects.values_list("action", "ok")) == [("send", False), ("send", False)]


def test_the_last_try_fails_the_message_for_good(chat_on, agent, linked):
    chat_on.ASKUSER_CHAT_ATTEMPTS = 2
    ask(agent)

    record(claim_one(), ok=False, error="Telegram could not be reached")
    Delivery.objects.update(next_attempt_at=timezone.now())
    row = record(claim_one(), ok=False, error="Telegram could not be reached")

    assert row.state == "failed"


def test_a_message_to_an_identity_unlinked_before_the_send_is_dropped(chat_on, agent, linked):
    ask(agent)
    core.unlink(ALICE)

    assert engine.claim_due(8) == [] and Delivery.objects.get().state == "dropped"


def test_a_failed_delivery_says_so_on_the_prompts_page(chat_on, agent, owner, linked):
    prompt = ask(agent)
    Delivery.objects.update(state="failed", last_error="Forbidden: bot was blocked by the user")
    browser = Client()
    browser.force_login(owner)

    pending_page = browser.get("/s/support-42/").content.decode()
    services.answer(prompt, {"deploy_target": "Production"}, by=owner, surface="web")
    resolved_page = browser.get("/s/support-42/").content.decode()

    assert "This question could not be sent to Telegram; answer it here." in pending_page
    assert "This question could not be sent to Telegram." in resolved_page


# --- the prompt's link ---------------------------------------------------------------------------------


def test_a_prompts_link_opens_its_session_page_for_its_owner_only(agent, owner, other_user):
    prompt = ask(agent)
    browser, stranger = Client(), Client()
    browser.force_login(owner)
    stranger.force_login(other_user)

    assert browser.get(f"/p/{prompt.pk}/")["Location"] == "/s/support-42/#prompt-panel"
    assert stranger.get(f"/p/{prompt.pk}/").status_code == 404
    assert Client().get(f"/p/{prompt.pk}/")["Location"].startswith("/login/")
    services.cancel(prompt, agent=agent)
    assert browser.get(f"/p/{prompt.pk}/")["Location"] == f"/s/support-42/#item-prompt-{prompt.pk}"


# --- the admin ----------------------------------------------------------------------------------------


def test_staff_see_links_and_each_chat_message_with_its_tries(chat_on, agent, staff, reviewer, linked):
    prompt = ask(agent)
    record(claim_one(), ok=False, error="Telegram could not be reached: Service Unavailable (503)")
    message = Delivery.objects.get()
    browser, reader = Client(), Client()
    browser.force_login(staff)
    reader.force_login(reviewer)

    links = browser.get("/admin/askuser_app/chatlink/").content.decode()
    listing = browser.get("/admin/askuser_app/delivery/").content.decode()
    page = reader.get(f"/admin/askuser_app/delivery/{message.pk}/change/")

    assert "@alice" in links and "4242" in links
    assert str(prompt.pk) in listing or "support-42" in listing
    assert page.status_code == 200 and "Service Unavailable (503)" in page.content.decode()
    assert reader.post(f"/admin/askuser_app/chatlink/{linked.pk}/delete/", {"post": "yes"}).status_code == 403
    assert ChatLink.objects.filter(pk=linked.pk).exists()


def test_a_flood_of_agent_news_leaves_one_waiting_row_per_address_and_the_latest_is_sent(chat_on, agent, linked):
    chat_on.ASKUSER_MESSAGE_RATE_LIMIT = 2000
    prompt = ask(agent, session="cc-job")
    for n in range(1000):
        services.post_agent_note(agent, "cc-job", f"Claude Code is waiting ({n})", tell="waiting")
    services.post_agent_note(agent, "cc-other", "Claude Code is waiting elsewhere", tell="waiting")

    waiting = Delivery.objects.filter(state="to_send")
    assert waiting.filter(prompt=None).count() == 2  # one per session and address, not 1,001
    assert waiting.filter(prompt=prompt).count() == 1  # a prompt's card is never replaced by news
    tries = [claimed for _ in range(3) for claimed in engine.claim_due(8)]  # two at once per host
    told = {claimed.news.text for claimed in tries if claimed.news is not None}
    assert told == {"Claude Code is waiting (999)", "Claude Code is waiting elsewhere"}


def test_news_sent_while_newer_news_replaces_it_is_closed_when_its_try_lands(chat_on, agent, linked):
    services.post_agent_note(agent, "cc-job", "Claude Code is waiting (1)", tell="waiting")
    in_flight = claim_one()
    services.post_agent_note(agent, "cc-job", "Claude Code is waiting (2)", tell="waiting")

    assert record(in_flight, ok=True).state == "closed"  # it was sent: never dropped in silence
    [latest] = engine.claim_due(8)
    assert latest.news is not None and latest.news.text == "Claude Code is waiting (2)"
