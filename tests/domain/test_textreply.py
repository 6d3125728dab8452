"""SPEC 4.2: a prompt as text, and plain-text replies read back into answers."""

from __future__ import annotations

import string

import pytest
from django.utils import translation
from hypothesis import assume, given
from hypothesis import strategies as st

from askuser_app.domain.textreply import (
    SKIP,
    SKIP_ALL,
    TextQuestion,
    fold,
    how_it_was_read,
    read_reply,
    render_prompt,
    what_is_missing,
    words,
)

DEPLOY = TextQuestion(
    "deploy_target", "Deploy", "Where first?", False, ("Staging (Recommended)", "Production"), ("Safe", "")
)
EXTRAS = TextQuestion("extras", "Extras", "Which extras?", True, ("Docs", "Changelog, short", "Blog post"))
WINDOW = TextQuestion("window", "Window", "When?", False, ("Tonight", "Tomorrow"))


def answers(questions, reply):
    reading = read_reply(questions, reply)
    assert reading.complete, reading
    return reading.answers


@pytest.mark.parametrize(
    "reply,values",
    [
        ("2", ["Production"]),
        ("2.", ["Production"]),
        ("production", ["Production"]),
        ("  PRODUCTION  ", ["Production"]),
        ("staging (recommended)", ["Staging (Recommended)"]),
        ("Canary in eu-west", ["Canary in eu-west"]),
        ("3", ["3"]),  # not an option number: free text
        ("deploy_target: 1", ["Staging (Recommended)"]),
        ("Deploy = production", ["Production"]),
    ],
)
def test_a_single_question_reply(reply, values):
    assert answers([DEPLOY], reply) == {"deploy_target": values}


def test_labels_are_matched_with_unicode_folding():
    question = TextQuestion("city", "City", "Where?", False, ("Straße", "Ｔｏｋｙｏ"))

    assert answers([question], "STRASSE") == {"city": ["Straße"]}
    assert answers([question], "tokyo") == {"city": ["Ｔｏｋｙｏ"]}


@pytest.mark.parametrize(
    "reply,values",
    [
        ("Changelog, short", ["Changelog, short"]),  # a label holding a comma, taken whole
        ("1, 3", ["Docs", "Blog post"]),
        ("docs; blog post", ["Docs", "Blog post"]),
        ("Blog post\n1", ["Docs", "Blog post"]),
        ("1, a release video", ["Docs", "a release video"]),
        ("a video, a podcast", ["a video, a podcast"]),
        ("3, 3, docs", ["Docs", "Blog post"]),
    ],
)
def test_a_multi_select_reply(reply, values):
    assert answers([EXTRAS], reply) == {"extras": values}


def test_several_questions_by_key_header_or_number():
    reply = "extras: 1, 2\nDeploy: production\n3 = tonight"

    assert answers([DEPLOY, EXTRAS, WINDOW], reply) == {
        "deploy_target": ["Production"],
        "extras": ["Docs", "Changelog, short"],
        "window": ["Tonight"],
    }


def test_unkeyed_lines_answer_the_remaining_questions_in_order():
    reply = "window: tomorrow\n2\ndocs"

    assert answers([DEPLOY, EXTRAS, WINDOW], reply) == {
        "deploy_target": ["Production"],
        "extras": ["Docs"],
        "window": ["Tomorrow"],
    }


def test_a_keyed_line_does_not_also_count_positionally():
    reading = read_reply([DEPLOY, EXTRAS], "extras: docs\n1")

    assert reading.answers == {"deploy_target": ["Staging (Recommended)"], "extras": ["Docs"]}


def test_a_reply_missing_a_question_is_not_complete_and_says_what_is_missing():
    reading = read_reply([DEPLOY, EXTRAS, WINDOW], "deploy_target: 2")

    assert not reading.complete
    assert reading.missing == ["extras", "window"]
    sentence = what_is_missing([DEPLOY, EXTRAS, WINDOW], reading)
    assert "2. Extras" in sentence and "3. Window" in sentence and "one line per question" in sentence


def test_more_lines_than_questions_is_not_complete():
    reading = read_reply([DEPLOY, WINDOW], "1\n2\nand also this")

    assert not reading.complete
    assert "more line" in what_is_missing([DEPLOY, WINDOW], reading)


def test_an_empty_reply_answers_nothing():
    assert read_reply([DEPLOY], "   \n ").missing == ["deploy_target"]


@pytest.mark.parametrize(
    "reply",
    [
        "https://example.com/deploy?x=1",
        "at 1:30 please",
        "1:30",
        "C:\\deploy\\staging",
        "/srv/app:/srv/lib",
        "ratio 3=4",
        "note: wait for QA",
    ],
)
def test_urls_times_and_paths_stay_free_text(reply):
    assert answers([DEPLOY], reply) == {"deploy_target": [reply]}


def test_a_time_is_not_read_as_a_numbered_key_among_several_questions():
    reading = read_reply([DEPLOY, WINDOW], "1\n1:30 tonight")

    assert reading.answers == {"deploy_target": ["Staging (Recommended)"], "window": ["1:30 tonight"]}


def test_an_exact_label_wins_over_a_number():
    question = TextQuestion("replicas", "Replicas", "How many?", False, ("3", "5"))

    assert answers([question], "3") == {"replicas": ["3"]}
    assert answers([question], "2") == {"replicas": ["5"]}


def test_how_it_was_read_names_each_question():
    reading = read_reply([DEPLOY, EXTRAS], "2\n1, my own")

    assert how_it_was_read([DEPLOY, EXTRAS], reading) == [
        "Deploy: Production",
        "Extras: Docs, “my own” (your own answer)",
    ]


def test_the_text_rendering_numbers_options_and_offers_other():
    text = render_prompt([DEPLOY])

    assert text.splitlines() == [
        "Deploy: Where first?",
        "  1. Staging (Recommended) — Safe",
        "  2. Production",
        "  Other: reply with your own answer",
        "",
        "Reply with a number or a label, or type your own answer; “skip” skips it.",
    ]


def test_the_text_rendering_of_several_questions_explains_keyed_lines():
    text = render_prompt([DEPLOY, EXTRAS])

    assert text.startswith("The agent asks 2 questions:")
    assert "1. Deploy (deploy_target): Where first?" in text
    assert "2. Extras (extras): Which extras? (choose one or more)" in text
    assert "“1: 2”" in text and "deploy_target: Staging (Recommended)" in text


# --- properties ------------------------------------------------------------------------------

label_text = st.text(string.ascii_letters + string.digits + " ()-'&äöüßéñ中文", min_size=1, max_size=30).map(str.strip)
labels = st.lists(label_text.filter(bool), min_size=2, max_size=4, unique_by=fold)


@given(labels, st.booleans(), st.data())
def test_any_label_reads_back_as_itself(options, multi, data):
    assume(all("," not in o and ";" not in o for o in options) or not multi)
    question = TextQuestion("q", "Q", "Which?", multi, tuple(options))
    chosen = data.draw(st.sampled_from(options))

    assert answers([question], chosen) == {"q": [chosen]}


@given(labels, st.booleans(), st.data())
def test_any_option_number_reads_back_as_its_option(options, multi, data):
    index = data.draw(st.integers(0, len(options) - 1))
    assume(str(index + 1) not in {fold(o) for o in options})  # a label "2" is read as that label
    question = TextQuestion("q", "Q", "Which?", multi, tuple(options))

    assert answers([question], str(index + 1)) == {"q": [options[index]]}


@given(labels, st.text(min_size=1, max_size=80).map(str.strip))
def test_free_text_that_is_no_label_stays_free_text(options, reply):
    question = TextQuestion("q", "Q", "Which?", False, tuple(options))
    assume(reply and "\n" not in reply and "\r" not in reply)
    assume(fold(reply) not in {fold(o) for o in options} and not reply.rstrip(".)").isdigit())
    assume(not any(fold(reply).startswith(prefix) for prefix in ("q:", "q=", "1:", "1=", "1 :", "1 =")))
    assume(fold(reply) not in words(SKIP) | words(SKIP_ALL))  # "skip" skips, whatever the labels

    assert answers([question], reply) == {"q": [reply]}


@given(
    st.sampled_from(
        ["https://{}.example.com/a:b", "{} at 10:30", "/var/{}:/opt/{}", "C:\\{}\\x", "ratio {}=2", "{}://x"]
    ),
    st.text(string.ascii_lowercase, min_size=1, max_size=10),
)
def test_urls_times_and_paths_are_never_split_into_keys(template, word):
    reply = template.replace("{}", word)
    questions = [DEPLOY, WINDOW]

    reading = read_reply(questions, f"1\n{reply}")

    assert reading.answers["window"] == [reply]


# --- in either language: Devanagari digits, and the words for skip, skip all and other --------


@pytest.mark.parametrize(
    "reply,values",
    [
        ("२", ["Production"]),
        ("२.", ["Production"]),
        ("१)", ["Staging (Recommended)"]),
        ("१।", ["Staging (Recommended)"]),  # the danda ends a Hindi sentence
        ("deploy_target: २", ["Production"]),
        ("३", ["३"]),  # not an option number: free text, as "3" is
        ("١", ["١"]),  # an Arabic-Indic 1 is not read as a number: free text
        ("²", ["Production"]),  # folded (NFKC) to 2, as before
    ],
)
def test_devanagari_digits_pick_options_and_other_scripts_digits_do_not(reply, values):
    assert answers([DEPLOY], reply) == {"deploy_target": values}


def test_devanagari_digits_number_questions_and_multi_select_parts():
    reply = "२: १, ३\n१ = २"

    assert answers([DEPLOY, EXTRAS], reply) == {"deploy_target": ["Production"], "extras": ["Docs", "Blog post"]}


@pytest.mark.parametrize("word", ["skip", "SKIP", "pass", "छोड़ें", "\u091b\u094b\u095c\u0947\u0902", "छोड़ो", "छोड़ दें"])
def test_the_word_for_skip_skips_a_question_in_either_language(word):
    # The second छोड़ें is written with the precomposed ड़ (U+095C): folded to the same word.
    assert answers([DEPLOY, EXTRAS], f"{word}\n1") == {"deploy_target": [], "extras": ["Docs"]}


@pytest.mark.parametrize("reply", ["skip all", "Skip All", "सभी छोड़ें", "सब छोड़ दें"])
def test_the_words_for_skip_all_skip_every_question(reply):
    assert answers([DEPLOY, EXTRAS, WINDOW], reply) == {"deploy_target": [], "extras": [], "window": []}


@pytest.mark.parametrize("reply", ["Other: Canary", "other = Canary", "अन्य: Canary", "दूसरा: Canary"])
def test_other_before_a_colon_is_ones_own_answer(reply):
    assert answers([DEPLOY], reply) == {"deploy_target": ["Canary"]}


def test_an_option_labelled_like_a_word_is_still_that_option():
    question = TextQuestion("next", "Next", "What now?", False, ("Skip", "Retry"))

    assert answers([question], "skip") == {"next": ["Skip"]}
    assert answers([question], "छोड़ें") == {"next": []}  # no option has that label: a skip


def test_a_skipped_question_reads_back_as_skipped_in_the_persons_language():
    reading = read_reply([DEPLOY, EXTRAS], "छोड़ें\n२")

    with translation.override("hi"):
        lines = how_it_was_read([DEPLOY, EXTRAS], reading)

    assert lines == ["Deploy: छोड़ा गया", "Extras: Changelog, short"]


def test_the_text_rendering_and_its_guidance_in_hindi():
    with translation.override("hi"):
        text = render_prompt([DEPLOY, EXTRAS])
        missing = what_is_missing([DEPLOY, EXTRAS], read_reply([DEPLOY, EXTRAS], "1"))

    assert text.startswith("एजेंट 2 प्रश्न पूछ रहा है:")
    assert "   अन्य: अपना उत्तर लिखकर भेजें" in text and "(एक या अधिक चुनें)" in text
    assert "Staging (Recommended)" in text  # the agent's words as written
    assert missing.startswith("आपके जवाब में 2. Extras का उत्तर नहीं था।")
