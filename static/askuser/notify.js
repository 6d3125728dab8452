// askuser Control UI: what is waiting for the person, wherever askuser is open.
// The tab title counts the person's pending prompts across their sessions, the
// icon carries the count, and (once the person turns them on) each new prompt
// shows one desktop notification, from one tab however many are open. Each
// page's socket tells the server whether the page is visible: a person with a
// tab in sight gets no push (askuser_app/runtime/presence.py).
// The server renders all of it on page load; this follows the socket's pushes
// of #waiting (templates/askuser/partials/waiting.html).
(function () {
  "use strict";

  var CHOICE = "askuser-notifications"; // this browser's choice: "on", "off" or none yet
  var COUNT = /^\(\d+\) /;

  // --- title and icon ---------------------------------------------------------------

  function indicator() {
    return document.getElementById("waiting");
  }

  function showCount(element) {
    var count = Number(element.dataset.count) || 0;
    var title = document.title.replace(COUNT, "");
    document.title = count ? "(" + count + ") " + title : title;
    var icon = document.getElementById("favicon");
    if (icon) {
      var href = element.dataset.icon || icon.dataset.plain;
      if (icon.getAttribute("href") !== href) icon.setAttribute("href", href);
    }
  }

  // A reconnecting (or connecting) page says what it shows; the socket sends
  // #waiting only when that is no longer so.
  var createWebSocket = htmx.createWebSocket || function (url) { return new WebSocket(url); };
  htmx.createWebSocket = function (url) {
    var element = indicator();
    if (!element) return createWebSocket(url);
    var withState = new URL(url, location.href);
    withState.searchParams.set("waiting", element.dataset.state || "");
    return createWebSocket(withState.toString());
  };

  // --- whether this page is in sight -----------------------------------------------------

  // The server pushes a new question to the person's devices only while none of their tabs
  // is visible (a visible page shows it, and notifies, itself): each socket says whether
  // its page is visible as it connects, and again whenever that changes.
  function visible() {
    return document.visibilityState === "visible";
  }

  var sockets = [];
  var connectSeen = htmx.createWebSocket;
  htmx.createWebSocket = function (url) {
    var withSight = new URL(url, location.href);
    withSight.searchParams.set("visible", visible() ? "1" : "0");
    var socket = connectSeen(withSight.toString());
    socket.told = visible();
    sockets.push(socket);
    socket.addEventListener("open", function () {
      if (socket.told !== visible()) tell(socket); // changed while it connected
    });
    socket.addEventListener("close", function () {
      sockets = sockets.filter(function (other) { return other !== socket; });
    });
    return socket;
  };

  function tell(socket) {
    if (socket.readyState !== WebSocket.OPEN) return; // it says so as it opens
    socket.told = visible();
    socket.send(JSON.stringify({ visible: socket.told }));
  }

  document.addEventListener("visibilitychange", function () {
    sockets.forEach(tell);
  });

  // --- the person's choice ------------------------------------------------------------

  function supported() {
    return "Notification" in window && window.isSecureContext;
  }

  function choice() {
    try {
      return window.localStorage.getItem(CHOICE);
    } catch (error) {
      return null;
    }
  }

  function choose(value) {
    try {
      window.localStorage.setItem(CHOICE, value);
    } catch (error) {
      // Storage refused (a private window's policy): the choice lasts this page.
    }
    chosen = value;
  }

  var chosen = null;

  function state() {
    if (!supported()) return "unsupported";
    if (Notification.permission === "denied") return "denied";
    var mine = choice() || chosen;
    if (Notification.permission === "granted" && mine === "on") return "on";
    return mine === "off" ? "off-chosen" : "off";
  }

  function showState() {
    var now = state();
    document.querySelectorAll("[data-notify-state]").forEach(function (element) {
      element.hidden = element.dataset.notifyState.split(" ").indexOf(now) === -1;
    });
    document.querySelectorAll("[data-notify-on]").forEach(function (button) {
      button.hidden = now !== "off" && now !== "off-chosen";
    });
    document.querySelectorAll("[data-notify-off]").forEach(function (button) {
      button.hidden = now !== "on";
    });
  }

  function askPermission() {
    // Only ever from the person's click: never on page load.
    return new Promise(function (resolve) {
      var asked = Notification.requestPermission(resolve); // older Safari answers through the callback
      if (asked && asked.then) asked.then(resolve);
    });
  }

  function turnOn() {
    if (!supported()) return showState();
    askPermission().then(function (permission) {
      if (permission === "granted") {
        choose("on");
        document.dispatchEvent(new CustomEvent("askuser:notifications-on"));
      }
      showState();
    });
  }

  function turnOff() {
    choose("off");
    document.dispatchEvent(new CustomEvent("askuser:notifications-off"));
    showState();
  }

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-notify-on]")) turnOn();
    else if (event.target.closest("[data-notify-off]")) turnOff();
  });
  // Turned on or off in another tab, or permission changed in the browser's settings.
  window.addEventListener("storage", function (event) {
    if (event.key === CHOICE) showState();
  });
  document.addEventListener("visibilitychange", showState);

  // --- one tab notifies ------------------------------------------------------------------

  // Every tab of the browser hears a new prompt; the tab holding this lock is
  // the one that shows it. The lock passes to another tab when its holder closes.
  var leader = !(navigator.locks && navigator.locks.request);
  if (!leader) {
    navigator.locks.request("askuser-notifier", function () {
      leader = true;
      return new Promise(function () {}); // held while this tab lives
    });
  }

  function open(url) {
    window.focus();
    window.location.assign(url);
  }

  function notify(element) {
    var url = element.dataset.arrivedUrl;
    var options = {
      body: element.dataset.arrivedBody,
      // The push notification for the same prompt has the same tag: one replaces the other.
      tag: "askuser-" + element.dataset.arrived,
      icon: (document.getElementById("favicon") || {}).dataset.plain,
      data: { url: url },
    };
    var title = element.dataset.arrivedTitle;
    function fromThePage() {
      try {
        var shown = new Notification(title, options);
        shown.onclick = function (event) {
          event.preventDefault();
          shown.close();
          open(url);
        };
      } catch (error) {
        // Where pages may not construct notifications (Android) and no service worker runs.
      }
    }
    if (!navigator.serviceWorker) return fromThePage();
    // With the service worker running (Web Push on this device), it shows the notification:
    // the page's and the push's then share one list, where the same tag replaces, never doubles
    // (a page's own notification and a worker's are kept apart, whatever their tags).
    navigator.serviceWorker.getRegistration("/").then(function (registration) {
      if (registration && registration.active) return registration.showNotification(title, options);
      fromThePage();
    }, fromThePage);
  }

  function arrived(element) {
    showCount(element);
    if (element.dataset.arrived && leader && state() === "on") notify(element);
  }

  document.addEventListener("htmx:oobAfterSwap", function () {
    var element = indicator();
    if (element && element.dataset.seen !== "1") {
      element.dataset.seen = "1";
      arrived(element);
    }
  });

  var element = indicator();
  if (element) {
    element.dataset.seen = "1";
    showCount(element);
  }
  showState();
  window.askuserNotify = {
    state: state,
    // What each open socket last told the server: true while its page is visible.
    told: function () {
      return sockets.filter(function (socket) { return socket.readyState === WebSocket.OPEN; })
        .map(function (socket) { return socket.told; });
    },
  };
})();
