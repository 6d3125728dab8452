// askuser's service worker: Web Push notifications while no askuser tab is open.
// Served at /sw.js (scope "/"). A push is JSON from askuser_app/delivery/notifiers/push/adapter.py:
//   {"type": "prompt", "tag", "title", "body", "url", ...}  shows a notification;
//   {"type": "closed", "tag"}                               closes it (the prompt resolved);
//   {"type": "test", "tag", "title", "body", "url"}         the settings page's test;
//   {"type": "news", "tag", "title", "body", "url"}         a coding agent waits or finished.
// The page's own notifications use the same tag ("askuser-" + prompt id), so one replaces the other.
// A prompt's push carries "actions": its buttons, each with a signed token (an option's answer, or
// "mute" this session); a tap posts the token (answerFromNotification) and answers without opening
// the page. The platform shows at most Notification.maxActions of them: options first, then mute.
"use strict";

self.addEventListener("install", function () {
  self.skipWaiting();
});

self.addEventListener("activate", function (event) {
  event.waitUntil(self.clients.claim());
});

function read(event) {
  if (!event.data) return null;
  try {
    return event.data.json();
  } catch (error) {
    return null;
  }
}

function close(tag) {
  return self.registration.getNotifications({ tag: tag }).then(function (shown) {
    shown.forEach(function (notification) {
      notification.close();
    });
  });
}

self.addEventListener("push", function (event) {
  var message = read(event);
  if (!message || !message.tag) return;
  if (message.type === "closed") {
    event.waitUntil(close(message.tag));
    return;
  }
  event.waitUntil(self.registration.showNotification(message.title || "askuser", notificationOf(message)));
});

// The installed app's badge: the person's waiting count, which every push about a prompt carries
// as "badge" ("prompt" and "closed"; askuser_app/delivery/channels/push/adapter.py), counted as it
// left the server (a closing push's count no longer holds the prompt that resolved).
// 0 clears it. Browsers without badges, or with the app not installed, ignore it.
self.addEventListener("push", function (event) {
  var message = read(event);
  if (!message || typeof message.badge !== "number" || !("setAppBadge" in navigator)) return;
  event.waitUntil(
    navigator.setAppBadge(message.badge).catch(function () {
      // Not allowed here (no installed app): the notification says it anyway.
    })
  );
});

// What a notification shows of a push: its body, and the buttons the platform has room for (each
// button's token kept in its data, by the button's id). When options are left out, the body says
// where the rest are. A hook's prompt stays until acted on (requireInteraction); only the
// settings page's test rings again when it replaces one (renotify).
function notificationOf(message) {
  var most = Math.max(0, Notification.maxActions || 0);
  var offered = Array.isArray(message.actions) ? message.actions : [];
  var options = offered.filter(function (action) {
    return action.action !== "mute";
  });
  var mute = offered.filter(function (action) {
    return action.action === "mute";
  });
  var chosen = options.slice(0, most);
  var kept = chosen.concat(mute.slice(0, most - chosen.length));
  var taps = {};
  kept.forEach(function (action) {
    taps[action.action] = { url: action.url, token: action.token };
  });
  var body = message.body || "";
  if (chosen.length < options.length && message.more) body += "\n" + message.more;
  return {
    body: body,
    tag: message.tag,
    renotify: message.type === "test" || message.renotify === true,
    requireInteraction: message.requireInteraction === true,
    actions: kept.map(function (action) {
      return { action: action.action, title: action.title };
    }),
    data: {
      url: message.url || "/",
      prompt_id: message.prompt_id || "",
      taps: taps,
      unreachable: message.unreachable || "",
    },
  };
}

self.addEventListener("notificationclick", function (event) {
  event.waitUntil(answerFromNotification(event.notification, event.action));
});

// A tap on a notification: a button posts its token and resolves to what the server said
// ({status, message}); the notification closes, and a refusal shows why, in a notification that
// opens the page. The notification itself, or a button with no token, opens the page.
function answerFromNotification(notification, action) {
  var data = notification.data || {};
  var tap = action && data.taps && data.taps[action];
  notification.close();
  if (!tap) return openPage(data.url).then(function () { return { status: 0, message: "" }; });
  var url = new URL(tap.url, self.location.origin);
  return fetch(url.href, {
    method: "POST",
    credentials: "omit",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token: tap.token }),
  })
    .then(function (response) {
      return response.json().then(
        function (said) { return { status: response.status, message: (said && said.message) || "" }; },
        function () { return { status: response.status, message: "" }; }
      );
    }, function () {
      return { status: 0, message: "" };
    })
    .then(function (said) {
      if (said.status === 200) return said;
      var why = said.message || data.unreachable || "";
      return self.registration
        .showNotification("askuser", { body: why, tag: notification.tag, data: { url: data.url || "/", taps: {} } })
        .then(function () { return said; });
    });
}

function openPage(url) {
  var given = new URL(url || "/", self.location.origin);
  // Always this origin: ASKUSER_PUBLIC_URL may name the server differently (localhost, 127.0.0.1).
  var target = new URL(given.pathname + given.search + given.hash, self.location.origin);
  return self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
    var same = windows.find(function (client) {
      return client.url === target.href;
    });
    if (same) return same.focus();
    var any = windows.find(function (client) {
      return "navigate" in client;
    });
    if (any) {
      return any.focus().then(function (focused) {
        return (focused || any).navigate(target.href);
      });
    }
    return self.clients.openWindow(target.href);
  });
}
