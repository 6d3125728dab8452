// askuser Web Push, the page's side: subscribe this browser through the service worker at /sw.js.
// It subscribes when the person turns notifications on: the "askuser:notifications-on" event (the
// in-page notifications' button), or the settings page's own button. Never a permission prompt on load.
(function () {
  "use strict";

  var supported = "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

  function csrf() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (error) {
      return "";
    }
  }

  function post(url, data) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(data),
    });
  }

  function settings() {
    return document.getElementById("push-settings");
  }

  function bytes(base64url) {
    var text = atob(base64url.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((base64url.length + 3) % 4));
    var out = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }

  function publicKey() {
    var section = settings();
    if (section && section.dataset.publicKey) return Promise.resolve(section.dataset.publicKey);
    return fetch("/settings/push/key", { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw new Error("Web Push is off (" + response.status + ")");
      return response.json().then(function (body) {
        return body.public_key;
      });
    });
  }

  function registration() {
    return navigator.serviceWorker.register("/sw.js", { scope: "/" }).then(function () {
      return navigator.serviceWorker.ready;
    });
  }

  function sameKey(subscription, key) {
    var given = subscription.options && subscription.options.applicationServerKey;
    if (!given) return true;
    var mine = bytes(key), theirs = new Uint8Array(given);
    return mine.length === theirs.length && mine.every(function (b, i) {
      return b === theirs[i];
    });
  }

  // Chrome without a way to its push service keeps subscribe() pending for minutes: say so sooner.
  function patiently(promise) {
    var section = settings();
    var wait = Number((section && section.dataset.subscribeTimeout) || 30000);
    var said = (section && section.dataset.pushTimeout) || "the browser's push service did not answer.";
    return Promise.race([
      promise,
      new Promise(function (resolve, reject) {
        setTimeout(function () {
          reject(new Error(said));
        }, wait);
      }),
    ]);
  }

  // Subscribe (or re-send an existing subscription, which also fixes a server that forgot it).
  function subscribe() {
    return Promise.all([registration(), publicKey()]).then(function (both) {
      var manager = both[0].pushManager, key = both[1];
      return manager.getSubscription().then(function (existing) {
        if (existing && sameKey(existing, key)) return existing;
        var fresh = function () {
          return patiently(manager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(key) }));
        };
        return existing ? existing.unsubscribe().then(fresh) : fresh();
      }).then(function (subscription) {
        return post("/settings/push/subscribe", subscription.toJSON()).then(function (response) {
          if (!response.ok) {
            return response.json().then(function (body) {
              throw new Error(body.error || String(response.status));
            });
          }
          return response.json();
        });
      });
    });
  }

  function current() {
    if (!supported) return Promise.resolve(null);
    return navigator.serviceWorker.getRegistration("/").then(function (found) {
      return found ? found.pushManager.getSubscription() : null;
    });
  }

  function unsubscribe() {
    return current().then(function (subscription) {
      if (!subscription) return null;
      var endpoint = subscription.endpoint;
      return subscription.unsubscribe().then(function () {
        return post("/settings/push/unsubscribe", { endpoint: endpoint });
      });
    });
  }

  // --- the settings page -----------------------------------------------------------------

  function show(section, state, detail) {
    var status = section.querySelector("#push-state");
    var enable = section.querySelector("#push-enable"), disable = section.querySelector("#push-disable");
    if (!status) return;
    status.textContent = (section.dataset["state" + state[0].toUpperCase() + state.slice(1)] || "") +
      (detail ? " " + detail : "");
    status.dataset.state = state;
    if (enable) enable.hidden = state === "on" || state === "unsupported" || state === "insecure";
    if (disable) disable.hidden = state !== "on";
  }

  function refresh() {
    var section = settings();
    if (!section || !window.htmx) return Promise.resolve();
    return window.htmx.ajax("GET", section.dataset.refreshUrl, {
      target: "#push-settings", select: "#push-settings", swap: "outerHTML",
    });
  }

  function describe(section) {
    if (!section.querySelector("#push-state")) return;
    if (!window.isSecureContext) return show(section, "insecure");
    if (!supported) return show(section, "unsupported");
    if (Notification.permission === "denied") return show(section, "blocked");
    current().then(function (subscription) {
      section.querySelectorAll("[data-endpoint]").forEach(function (item) {
        var mine = subscription && item.dataset.endpoint === subscription.endpoint;
        var label = item.querySelector(".push-this");
        if (label) label.textContent = mine ? " (" + section.dataset.thisDevice + ")" : "";
        item.classList.toggle("is-this-device", !!mine);
      });
      var listed = subscription && section.querySelector('[data-endpoint="' + CSS.escape(subscription.endpoint) + '"]');
      show(section, subscription && listed && Notification.permission === "granted" ? "on" : "off");
    }, function () {
      show(section, "off");
    });
  }

  function failed(section, error) {
    show(section, Notification.permission === "denied" ? "blocked" : "failed", error && error.message);
  }

  document.addEventListener("click", function (event) {
    var section = settings();
    var button = event.target.closest && event.target.closest("#push-enable, #push-disable");
    if (!section || !button) return;
    if (button.id === "push-enable") {
      Notification.requestPermission().then(function (permission) {
        if (permission !== "granted") return show(section, permission === "denied" ? "blocked" : "off");
        return subscribe().then(refresh);
      }).catch(function (error) {
        failed(section, error);
      });
    } else {
      unsubscribe().then(refresh).catch(function (error) {
        failed(section, error);
      });
    }
  });

  // The in-page notifications were turned on: this browser subscribes to pushes too.
  document.addEventListener("askuser:notifications-on", function () {
    if (!supported || !window.isSecureContext || Notification.permission !== "granted") return;
    subscribe().then(refresh).catch(function (error) {
      var section = settings();
      if (section) failed(section, error);
      else if (window.console) console.warn("askuser: Web Push could not be turned on:", error);
    });
  });

  function start() {
    var section = settings();
    if (section) describe(section);
  }

  if (window.htmx) {
    window.htmx.onLoad(function (element) {
      if (element.id === "push-settings" || element === document.body) start();
    });
  } else {
    start();
  }
})();
