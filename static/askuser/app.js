// askuser Control UI: the stepper, keyboard, countdowns and live updates.
// Everything works without this file as plain forms; this makes it pleasant.
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  // Words in the page's language, from the catalogue script (/jsi18n/) the page loads first;
  // without it, the English the strings are written in.
  var gettext = window.gettext || function (text) { return text; };
  var interpolate = window.interpolate || function (format, values) {
    return format.replace(/%\((\w+)\)s/g, function (_, name) { return values[name]; });
  };
  var lang = document.documentElement.lang || "en";

  var PANEL_COOKIE = "askuser_panel";
  var wide = window.matchMedia("(min-width: 641px)");
  // How long a hook's new prompt ignores keys and clicks, counted while the page is seen (as
  // browsers guard their own permission prompts): a key meant for something else never answers it.
  var QUIET_MS = 1000;

  function panel() {
    var element = document.getElementById("prompt-panel");
    return element && !element.hidden ? element : null;
  }

  // --- the inbox: every waiting prompt's panel, one card each ---------------------------

  function inboxCards() {
    return Array.prototype.slice.call(document.querySelectorAll("#inbox-prompts .inbox-card"));
  }

  function inInbox(element) {
    return element.classList.contains("inbox-card");
  }

  // The card the keys act on: the one holding the focus, else the first.
  function activeCard() {
    var focused = document.activeElement;
    var card = focused && focused.closest ? focused.closest(".inbox-card") : null;
    return card || inboxCards()[0] || null;
  }

  function focusCard(card) {
    if (!card) return;
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "nearest" });
  }

  function moveCard(by) {
    var cards = inboxCards();
    if (!cards.length) return;
    var focused = document.activeElement;
    var current = focused && focused.closest ? focused.closest(".inbox-card") : null;
    var index = current ? cards.indexOf(current) + by : 0;
    focusCard(cards[Math.max(0, Math.min(index, cards.length - 1))]);
  }

  // --- countdowns ------------------------------------------------------------------

  // Spans of time said by the browser in the page's language (Intl), e.g. "1h 5m", "1 घं॰ 5 मि॰".
  var durations = {};

  function duration(parts, style) {
    if (window.Intl && Intl.DurationFormat) {
      if (!durations[style]) durations[style] = new Intl.DurationFormat(lang, { style: style });
      return durations[style].format(parts);
    }
    var units = style === "long" ? { hours: " h ", minutes: " min ", seconds: " s " } : { hours: "h ", minutes: "m ", seconds: "s " };
    return Object.keys(parts).map(function (unit) { return parts[unit] + units[unit]; }).join("").trim();
  }

  function remaining(seconds) {
    if (seconds <= 0) return { text: gettext("Expired") };
    var h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = Math.floor(seconds % 60);
    var text = h ? duration({ hours: h, minutes: m }, "narrow") : m + ":" + String(s).padStart(2, "0");
    return { text: interpolate(gettext("%(time)s left"), { time: text }, true) };
  }

  var unitFormats = {};

  function units(count, unit) {
    try {
      if (!unitFormats[unit]) unitFormats[unit] = new Intl.NumberFormat(lang, { style: "unit", unit: unit, unitDisplay: "long" });
      return unitFormats[unit].format(count);
    } catch (error) {
      return count + " " + unit + (count === 1 ? "" : "s");
    }
  }

  // What a screen reader hears: whole minutes, so the words change once a
  // minute, not every second (the ticking number itself is aria-hidden).
  function spokenLeft(seconds, spoken) {
    if (seconds <= 0) return spoken.dataset.over;
    if (seconds < 60) return spoken.dataset.soon;
    var minutes = Math.ceil(seconds / 60), h = Math.floor(minutes / 60), m = minutes % 60;
    var parts = h ? [units(h, "hour")] : [];
    if (m || !h) parts.push(units(m, "minute"));
    return spoken.dataset.spoken.replace("{time}", parts.join(" "));
  }

  function tick() {
    document.querySelectorAll(".countdown[data-expires-at]").forEach(function (element) {
      var seconds = (Date.parse(element.dataset.expiresAt) - Date.now()) / 1000;
      var shown = remaining(seconds);
      if (element.textContent !== shown.text) element.textContent = shown.text;
      var spoken = element.nextElementSibling;
      if (spoken && spoken.hasAttribute("data-countdown-spoken")) {
        var said = spokenLeft(seconds, spoken);
        if (spoken.textContent !== said) spoken.textContent = said;
      }
      element.classList.toggle("is-urgent", seconds > 0 && seconds < 60);
      element.classList.toggle("is-over", seconds <= 0);
      var owner = element.closest(".panel[data-prompt-id]");
      if (owner) {
        // More time moves the deadline: the panel follows its countdown.
        if (owner.dataset.expiresAt !== element.dataset.expiresAt) owner.dataset.expiresAt = element.dataset.expiresAt;
        owner.classList.toggle("is-expired", seconds <= 0);
      }
    });
  }

  // --- the stepper ------------------------------------------------------------------

  function steps(element) {
    return Array.prototype.slice.call(element.querySelectorAll(".step"));
  }

  function currentStep(element) {
    return element.querySelector(".step.is-current") || steps(element)[0];
  }

  function showStep(element, number, focus) {
    var all = steps(element);
    number = Math.max(1, Math.min(number, all.length));
    all.forEach(function (step, index) {
      step.classList.toggle("is-current", index + 1 === number);
    });
    element.classList.toggle("is-first-step", number === 1);
    element.classList.toggle("is-last-step", number === all.length);
    var step = all[number - 1];
    element.querySelector("[data-progress]").textContent = number + "/" + all.length;
    element.querySelector("[data-bar-header]").textContent = step.dataset.header;
    element.querySelector("[data-bar-question]").textContent = step.dataset.question;
    updateNext(step);
    if (focus) focusStep(step);
  }

  function focusStep(step) {
    var target = step.querySelector(".options input:checked") || step.querySelector(".options input");
    // A hook's prompt (a permission) never puts the focus on an option the person did not choose
    // (Space would tick Allow, Enter send it): the panel itself takes it, to be read and chosen in.
    if (!step.querySelector(".options input:checked") && step.closest("[data-hook]")) target = step.closest(".panel");
    if (target) target.focus({ preventScroll: true });
  }

  // --- a hook's prompt: quiet for a moment after it appears ------------------------------------

  function quiet(element) {
    return element.hasAttribute("data-quiet");
  }

  function quieten(element) {
    element.setAttribute("data-quiet", "");
    function start() {
      if (document.hidden) return;
      document.removeEventListener("visibilitychange", start);
      window.setTimeout(function () { element.removeAttribute("data-quiet"); }, QUIET_MS);
    }
    document.addEventListener("visibilitychange", start);
    start();
  }

  function answered(step) {
    return !!step.querySelector(".options input:checked") || step.querySelector(".other-input").value.trim() !== "";
  }

  function updateNext(step) {
    var ready = answered(step);
    var element = step.closest(".panel");
    element.querySelectorAll('.panel-actions [data-action="next"], .panel-actions [data-action="submit"]').forEach(function (button) {
      button.setAttribute("aria-disabled", ready || !wide.matches ? "false" : "true");
    });
  }

  function clearStep(step) {
    step.querySelectorAll(".options input").forEach(function (input) {
      input.checked = false;
    });
    step.querySelector(".other-input").value = "";
    syncChecked(step);
  }

  function syncChecked(step) {
    step.querySelectorAll(".options input").forEach(function (input) {
      input.setAttribute("aria-checked", input.checked ? "true" : "false");
    });
    updateNext(step);
  }

  function advance(element) {
    var step = currentStep(element);
    var number = Number(step.dataset.step);
    if (!wide.matches) return;
    if (number < steps(element).length) {
      showStep(element, number + 1, true);
    } else {
      submit(element, "answer");
    }
  }

  function submit(element, action) {
    var button = element.querySelector('button[name="action"][value="' + action + '"]');
    var form = element.querySelector(".panel-form");
    if (form.requestSubmit) form.requestSubmit(button);
    else button.click();
  }

  // --- collapse and expand -------------------------------------------------------------

  function showCollapsed(element, collapsed) {
    element.classList.toggle("is-collapsed", collapsed);
    var bar = element.querySelector(".panel-bar");
    bar.setAttribute("aria-expanded", collapsed ? "false" : "true");
    element.querySelector("[data-toggle-label]").textContent = collapsed ? gettext("Show the question") : gettext("Hide the question");
  }

  function setCollapsed(element, collapsed, focus) {
    showCollapsed(element, collapsed);
    document.cookie = PANEL_COOKIE + "=" + (collapsed ? "collapsed" : "expanded") + "; path=/; max-age=31536000; samesite=lax";
    if (collapsed && focus) {
      var composer = document.getElementById("composer-text");
      if (composer && wide.matches) composer.focus();
    } else if (!collapsed && focus) {
      focusStep(currentStep(element));
    }
  }

  // --- keyboard ---------------------------------------------------------------------------

  function typing(target) {
    return target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text"));
  }

  function onInboxKey(event) {
    // Letters typed into a field (Other, the language's list) are the field's.
    if (typing(event.target) || event.target.tagName === "SELECT") return false;
    var card = activeCard();
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      moveCard(event.key === "j" ? 1 : -1);
      return true;
    }
    if (!card || (event.key !== "s" && event.key !== "m")) return false;
    var action = card.querySelector(event.key === "s" ? '[data-action="skip"]' : '[data-action="more-time"]');
    event.preventDefault();
    if (action) action.click();
    return true;
  }

  function onKey(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (document.getElementById("inbox-prompts") && onInboxKey(event)) return;
    var element = panel() || activeCard();
    if (!element) return;
    var inPanel = element.contains(event.target);
    if (element.hasAttribute("data-hook") && ignoredByHook(element, event, inPanel)) {
      event.preventDefault();
      return;
    }
    if (event.key === "Escape" && !inInbox(element) && !element.classList.contains("is-collapsed") && (inPanel || !typing(event.target))) {
      event.preventDefault();
      setCollapsed(element, true, true);
      return;
    }
    if (element.classList.contains("is-collapsed")) return;
    var step = currentStep(element);
    var inputs = Array.prototype.slice.call(step.querySelectorAll(".options input"));
    if (/^[1-9]$/.test(event.key) && !typing(event.target) && (inPanel || !typing(document.activeElement))) {
      var number = Number(event.key);
      if (number <= inputs.length) {
        event.preventDefault();
        choose(element, step, inputs[number - 1], true);
      } else if (number === inputs.length + 1) {
        event.preventDefault();
        step.querySelector(".other-input").focus();
      }
      return;
    }
    if (!inPanel) return;
    if ((event.key === "ArrowDown" || event.key === "ArrowUp") && event.target.type === "checkbox") {
      event.preventDefault();
      var index = inputs.indexOf(event.target) + (event.key === "ArrowDown" ? 1 : -1);
      inputs[(index + inputs.length) % inputs.length].focus();
      return;
    }
    if (event.key === "Enter" && event.target.tagName !== "BUTTON" && event.target.tagName !== "TEXTAREA") {
      event.preventDefault();
      // A hook's prompt is sent by Enter only on what was chosen: the option itself, or words typed in Other.
      if (element.hasAttribute("data-hook") && !chosenHere(event.target)) return;
      if (answered(step)) advance(element);
      else if (!wide.matches) submit(element, "answer");
    }
  }

  // A hook's prompt ignores what a key does to it while it is quiet, and a key held down since before
  // (its repeats); keys typed into a field outside it stay the field's.
  function ignoredByHook(element, event, inPanel) {
    if (inInbox(element) || event.key === "Tab" || (!inPanel && typing(event.target))) return false;
    return quiet(element) || (event.repeat && inPanel);
  }

  function chosenHere(target) {
    if (target.classList.contains("other-input")) return target.value.trim() !== "";
    return !!target.closest(".options") && target.checked;
  }

  function choose(element, step, input, byKey) {
    if (input.type === "radio") {
      input.checked = true;
      step.querySelector(".other-input").value = "";
    } else {
      input.checked = !input.checked;
    }
    input.focus({ preventScroll: true });
    syncChecked(step);
    // In the inbox a key only picks (Enter sends): a wrong key among many prompts costs too much.
    if (input.type === "radio" && byKey && !inInbox(element)) advanceSoon(element, step, true);
  }

  function advanceSoon(element, step, byKey) {
    // One single-select question: the choice is the answer, as a chat app's button; a hook's
    // (a permission) only when clicked, never by one key.
    if (element.hasAttribute("data-answers-at-once")) return submit(element, "answer");
    if (element.hasAttribute("data-answers-on-click") && !byKey) return submit(element, "answer");
    if (element.hasAttribute("data-answers-on-click")) return;
    // A single-select choice moves on by itself, after a beat to see it.
    if (!wide.matches || Number(step.dataset.step) === steps(element).length) return;
    window.setTimeout(function () {
      if (currentStep(element) === step && answered(step)) advance(element);
    }, 180);
  }

  // --- wiring a panel ------------------------------------------------------------------------

  function initPanel(element, isNew) {
    if (element.dataset.ready) return;
    element.dataset.ready = "1";
    showStep(element, 1, false);
    element.addEventListener("click", function (event) {
      var action = event.target.closest("[data-action]");
      if (!action) return;
      var step = currentStep(element);
      var name = action.dataset.action;
      if (name === "toggle") setCollapsed(element, !element.classList.contains("is-collapsed"), true);
      if (name === "back") showStep(element, Number(step.dataset.step) - 1, true);
      if (name === "skip") {
        clearStep(step);
        if (Number(step.dataset.step) < steps(element).length) showStep(element, Number(step.dataset.step) + 1, true);
        else submit(element, "answer");
      }
      if ((name === "next" || name === "submit") && action.getAttribute("aria-disabled") === "true") {
        event.preventDefault();
        step.querySelector(".hint").classList.add("is-nudged");
        return;
      }
      if (name === "next") advance(element);
    });
    // While a hook's prompt is quiet, a click meant for what was there before does nothing in it.
    element.addEventListener("click", function (event) {
      if (quiet(element) && event.target.closest(".panel-form, .more-time")) {
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    }, true);
    var pointed = false; // a choice made with the pointer (not the arrow keys) may advance
    element.addEventListener("pointerdown", function (event) {
      pointed = !quiet(element) && !!event.target.closest(".option");
    });
    element.addEventListener("keydown", function () {
      pointed = false; // a press that ended elsewhere leaves no click behind for the arrow keys
    });
    element.addEventListener("change", function (event) {
      var step = event.target.closest(".step");
      if (!step) return;
      if (event.target.type === "radio") {
        step.querySelector(".other-input").value = "";
        if (pointed) advanceSoon(element, step, false);
      }
      pointed = false;
      syncChecked(step);
    });
    element.addEventListener("input", function (event) {
      if (!event.target.classList.contains("other-input")) return;
      var step = event.target.closest(".step");
      if (event.target.value.trim() && step.querySelector('.options input[type="radio"]')) {
        // Typing your own answer replaces a single-select choice.
        step.querySelectorAll(".options input").forEach(function (input) {
          input.checked = false;
        });
      }
      syncChecked(step);
    });
    tick();
    if (element.hasAttribute("data-hook") && !inInbox(element)) quieten(element);
    if (isNew) announce(element.dataset.announce || "");
    if (isNew && element.hasAttribute("data-hook")) noteDraft(element);
    // Expanded on a wide screen the panel takes the composer's place, so focus follows it
    // there; a person typing keeps their place at any width (the panel came collapsed).
    // In the inbox a new card never takes the focus from the one the person is answering.
    if (isNew && !inInbox(element) && !element.classList.contains("is-collapsed") && !typing(document.activeElement)) {
      focusStep(currentStep(element));
    }
  }

  // A panel arriving while the person types in a field comes as its bar, so that on a wide
  // screen it does not take the composer's place (and the focus with it); their choice of
  // expanded or collapsed (the cookie) is kept for the next.
  function arriveQuietly(incoming) {
    if (incoming.hidden || !wide.matches || !typing(document.activeElement)) return;
    showCollapsed(incoming, true);
  }

  // --- the screen reader's announcement ------------------------------------------------------

  function announce(sentence) {
    var region = document.querySelector("[data-announcer]");
    if (!region) return;
    // Emptied first, so that the same sentence twice is still spoken twice.
    region.textContent = "";
    if (sentence) {
      window.setTimeout(function () {
        region.textContent = sentence;
      }, 50);
    }
  }

  // When the panel closes (answered, cancelled, expired) with the focus in it,
  // the focus would fall to the page's body: it goes back to the composer.
  var focusInClosingPanel = false;

  function incomingPanel(incoming) {
    // htmx hands over the new markup as the element or in a fragment.
    return incoming.id === "prompt-panel" ? incoming : incoming.querySelector && incoming.querySelector("#prompt-panel");
  }

  function noteFocusBeforeClosing(target, incoming) {
    var next = incomingPanel(incoming);
    var focused = document.activeElement;
    var lost = !focused || focused === document.body || target.contains(focused);
    focusInClosingPanel = !!next && next.hidden && !target.hidden && lost;
  }

  function panelClosed() {
    announce("");
    var composer = document.getElementById("composer-text");
    if (focusInClosingPanel && composer && wide.matches) {
      // At the next frame, as the closed panel is drawn: focusing now would lay the page out mid-swap.
      window.requestAnimationFrame(function () {
        // Still on the panel when it was hidden in place (its answer sent): the browser drops it later.
        var active = document.activeElement;
        if (!panel() && (!active || active === document.body || active.closest("#prompt-panel[hidden]"))) composer.focus();
      });
    }
    focusInClosingPanel = false;
  }

  // --- the answer sent: the panel closes as it leaves ---------------------------------------------

  // A session page's panel closes the moment its answer (or Skip all) is sent, not when the
  // server's response comes back: the person sees at once that the click was taken. The page's
  // notice says the answer is on its way until the response comes with its summary in the
  // timeline (the proof it was recorded). Refused (a 422, its reason swapped into the panel),
  // failed (another status) or never answered (no connection), the panel comes back as it was,
  // with what happened said in it and the focus in it: nothing looks recorded that was not.
  var sending = null; // {panel, form} of the answer in flight

  function panelFormOf(event) {
    var form = event.detail.elt;
    if (!form || !form.classList || !form.classList.contains("panel-form")) return null;
    var element = form.closest("#prompt-panel");
    return element && !element.hidden ? element : null;
  }

  function sayInPage(text) {
    var notice = document.getElementById("notice");
    if (notice) notice.textContent = text;
  }

  document.addEventListener("htmx:beforeSend", function (event) {
    var element = panelFormOf(event);
    if (!element) return;
    sending = { panel: element, form: event.detail.elt };
    var focused = document.activeElement;
    focusInClosingPanel = !focused || focused === document.body || element.contains(focused);
    element.hidden = true;
    sayInPage(gettext("Sending your answer…"));
    updateComposer();
    panelClosed();
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    if (!sending || event.detail.elt !== sending.form) return;
    var element = sending.panel;
    sending = null;
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status >= 200 && status < 300) return; // recorded, or told why not (the notice); its summary came with it
    if (document.getElementById("prompt-panel") !== element) {
      // A push replaced the panel meanwhile: the prompt was resolved (here or elsewhere) or another came.
      if (status !== 422) sayInPage("");
      return;
    }
    sayInPage("");
    if (status !== 422) {
      var error = element.querySelector("#panel-error");
      if (error) error.textContent = gettext("Your answer could not be confirmed, so it may not have been recorded. Check the connection and send it again.");
    }
    element.hidden = false;
    updateComposer();
    if (!element.classList.contains("is-collapsed")) focusStep(currentStep(element));
    else element.focus({ preventScroll: true });
  });

  // --- the composer -----------------------------------------------------------------------------

  function initComposer(form) {
    if (form.dataset.ready) return;
    form.dataset.ready = "1";
    var text = form.querySelector("textarea");
    text.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        if (heldForHook(text, event)) return;
        if (text.value.trim()) form.requestSubmit ? form.requestSubmit() : form.submit();
      }
    });
    text.addEventListener("input", function () {
      if (!text.value.trim()) delete text.dataset.draftBefore;
      text.style.height = "auto";
      text.style.height = text.scrollHeight + "px";
    });
    form.addEventListener("htmx:afterRequest", function (event) {
      if (event.detail.successful) {
        text.value = "";
        text.style.height = "auto";
      }
    });
  }

  // While a hook's prompt waits, what is typed into the composer is read as the answer to it.
  // Words begun (or a composer focused) before it appeared were meant for something else: Enter
  // keeps them and says so, and a second Enter sends them. An Enter while the prompt is quiet,
  // or one held down, sends nothing.
  function noteDraft(element) {
    var text = document.getElementById("composer-text");
    if (text && (text.value.trim() || document.activeElement === text)) text.dataset.draftBefore = element.dataset.promptId;
  }

  function heldForHook(text, event) {
    var shown = panel();
    if (!shown || !shown.hasAttribute("data-hook")) return false;
    var begunBefore = text.dataset.draftBefore === shown.dataset.promptId;
    if (!begunBefore && !quiet(shown) && !event.repeat) return false;
    if (!event.repeat) delete text.dataset.draftBefore;
    var notice = document.getElementById("composer-error");
    if (notice) notice.dataset.heldForHook = "1";
    if (notice) notice.textContent = gettext("A question arrived while you were typing: this text would answer it. Press Enter again to send it as your answer.");
    return true;
  }

  function forgetHeldText() {
    var notice = document.getElementById("composer-error");
    if (!notice || !notice.dataset.heldForHook) return;
    delete notice.dataset.heldForHook;
    notice.textContent = "";
  }

  function updateComposer() {
    var text = document.getElementById("composer-text");
    if (!text) return;
    if (!text.dataset.chatPlaceholder) text.dataset.chatPlaceholder = text.placeholder;
    var placeholder = panel() ? text.dataset.replyPlaceholder : text.dataset.chatPlaceholder;
    if (text.placeholder !== placeholder) text.placeholder = placeholder;
  }

  // --- live updates -------------------------------------------------------------------------------

  function nearBottom(scroller) {
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120;
  }

  // The timeline follows new items while the person is at its end; one who
  // scrolled up to read keeps their place. Where they are is kept from the
  // scroll events, so that no swap measures the page: a measurement after a
  // change is a layout of the whole page in the middle of the swap, and a
  // swap is what the person waits for after each click.
  var atEnd = true;
  document.addEventListener("scroll", function (event) {
    if (event.target.id === "scroller") atEnd = nearBottom(event.target);
  }, { capture: true, passive: true });

  function followEnd() {
    var scroller = document.getElementById("scroller");
    if (!scroller || !atEnd) return;
    // At the next frame, when the browser lays the page out anyway.
    window.requestAnimationFrame(function () {
      scroller.scrollTop = scroller.scrollHeight;
    });
  }

  // The inbox's list comes whole (a response, a push): the cards the page shows stay
  // as they are, with what is chosen in them and the focus; gone ones leave, new
  // ones come in at their place. A focused card that leaves hands the focus on.
  function updateInbox(target, incoming) {
    var wanted = {};
    Array.prototype.forEach.call(incoming.children, function (item) { wanted[item.id] = true; });
    var focused = document.activeElement;
    var focusedItem = focused && focused.closest ? focused.closest("#inbox-prompts > li") : null;
    var focusAt = -1;
    Array.prototype.slice.call(target.children).forEach(function (item, index) {
      if (wanted[item.id]) return;
      if (item === focusedItem) focusAt = index;
      item.remove();
    });
    var previous = null;
    Array.prototype.slice.call(incoming.children).forEach(function (item) {
      var existing = document.getElementById(item.id);
      if (existing && existing.parentNode === target) {
        previous = existing;
        return;
      }
      target.insertBefore(item, previous ? previous.nextSibling : target.firstChild);
      htmx.process(item);
      var card = item.querySelector(".inbox-card");
      if (card) initPanel(card, true);
      previous = item;
    });
    if (focusAt >= 0) {
      var cards = inboxCards();
      if (cards.length) focusCard(cards[Math.min(focusAt, cards.length - 1)]);
    }
  }

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    var incoming = event.detail.fragment;
    if (target.id === "inbox-prompts") {
      // htmx hands over the new markup as the element or in a fragment.
      var list = incoming.id === "inbox-prompts" ? incoming : incoming.querySelector && incoming.querySelector("#inbox-prompts");
      if (list) {
        event.detail.shouldSwap = false;
        updateInbox(target, list);
      }
      return;
    }
    if (target.id === "prompt-panel") {
      var next = incomingPanel(incoming);
      // A response closes the panel of the prompt it answered, not a newer one pushed before it arrived.
      if (next && next.dataset.closes && (target.hidden || target.dataset.promptId !== next.dataset.closes)) {
        event.detail.shouldSwap = false;
        return;
      }
      noteFocusBeforeClosing(target, incoming);
      if (!next) return;
      // The same prompt again (a resync): keep what the user has chosen so far.
      var same = !target.hidden && target.dataset.promptId && target.dataset.promptId === next.dataset.promptId;
      if (same) event.detail.shouldSwap = false;
      else arriveQuietly(next);
      return;
    }
    if (target.id === "timeline-items" && incoming.id !== "timeline-items") {
      // Items can arrive twice (the response and the push): update in place.
      Array.prototype.slice.call(incoming.children).forEach(function (item) {
        var existing = item.id && document.getElementById(item.id);
        if (existing && existing.parentNode === target) existing.replaceWith(item);
      });
    }
  });

  document.addEventListener("htmx:oobAfterSwap", function (event) {
    tick(); // a countdown swapped in (More time) shows its new time at once
    if (event.detail.target.id === "timeline-items") followEnd();
    updateComposer();
    if (!panel()) forgetHeldText();
    if (focusInClosingPanel && !panel()) panelClosed();
  });

  // The language switcher changes the language as soon as one is chosen (its button is for pages without JavaScript).
  document.addEventListener("change", function (event) {
    if (!event.target.matches("[data-submit-on-change]")) return;
    var form = event.target.form;
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
  });

  htmx.onLoad(function (root) {
    var element = root.id === "prompt-panel" ? root : root.querySelector && root.querySelector("#prompt-panel");
    if (element && !element.hidden) initPanel(element, root === element);
    if (root.querySelectorAll) root.querySelectorAll(".inbox-card").forEach(function (card) { initPanel(card, false); });
    var composer = root.id === "composer" ? root : root.querySelector && root.querySelector("#composer");
    if (composer) initComposer(composer);
    updateComposer();
  });

  // --- the live socket's reconnect -------------------------------------------------------------

  // After a server restart every open page would knock at once: each waits a
  // random time below a bound that doubles per failed try (full jitter),
  // and starts again from the smallest bound once connected.
  var RECONNECT = { base: 500, factor: 2, cap: 30000 };

  function reconnectDelay(retries, random) {
    var bound = Math.min(RECONNECT.cap, RECONNECT.base * Math.pow(RECONNECT.factor, retries));
    return bound * (random === undefined ? Math.random() : random);
  }

  // A reconnecting page says since when it may have missed something and
  // which prompt it shows, and gets only that, not its timeline again. The
  // server's cursor plus the time this page has been open: never later than
  // the server's clock, so nothing is skipped.
  var loadedAt = performance.now();
  var lostAt = null;
  var live = false;

  function resumeUrl(url) {
    if (lostAt === null) return url;
    var resumed = new URL(url);
    var since = Number(resumed.searchParams.get("since"));
    if (since) resumed.searchParams.set("since", String(Math.floor(since + lostAt - loadedAt)));
    if (resumed.searchParams.has("shown")) {
      var shown = panel();
      resumed.searchParams.set("shown", shown ? shown.dataset.promptId || "" : "");
      // And how often its deadline was moved: a More time missed meanwhile comes back.
      var countdown = shown && shown.querySelector(".countdown[data-extended]");
      resumed.searchParams.set("extended", countdown ? countdown.dataset.extended : "");
    }
    return resumed.toString();
  }

  htmx.config.wsReconnectDelay = function (retries) {
    return reconnectDelay(retries);
  };
  var createWebSocket = htmx.createWebSocket || function (url) { return new WebSocket(url); };
  htmx.createWebSocket = function (url) {
    return createWebSocket(resumeUrl(url));
  };
  document.addEventListener("htmx:wsOpen", function () {
    live = true;
  });
  document.addEventListener("htmx:wsClose", function () {
    if (live) lostAt = performance.now();
    live = false;
  });
  window.askuserLive = { reconnectDelay: reconnectDelay, resumeUrl: resumeUrl };

  document.addEventListener("keydown", onKey);
  document.addEventListener("DOMContentLoaded", function () {
    var scroller = document.getElementById("scroller");
    if (scroller) scroller.scrollTop = scroller.scrollHeight;
    var element = panel();
    if (element && !element.classList.contains("is-collapsed") && wide.matches) focusStep(currentStep(element));
  });
  window.setInterval(tick, 1000);
  tick();
})();
