// askuser's service worker: Web Push notifications while no askuser tab is open.
// Served at /sw.js (scope "/"). A push is JSON from askuser_app/delivery/notifiers/push/adapter.py:
//   {"type": "prompt", "tag", "title", "body", "url", ...}  shows a notification;
//   {"type": "closed", "tag"}                               closes it (the prompt resolved);
//   {"type": "test", "tag", "title", "body", "url"}         the settings page's test;
//   {"type": "news", "tag", "title", "body", "url"}         a coding agent waits or finished.
// The page's own notifications use the same tag ("askuser-" + prompt id), so one replaces the other.
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
  event.waitUntil(
    self.registration.showNotification(message.title || "askuser", {
      body: message.body || "",
      tag: message.tag,
      renotify: message.type === "test",
      data: { url: message.url || "/", prompt_id: message.prompt_id || "" },
    })
  );
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

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var given = new URL((event.notification.data && event.notification.data.url) || "/", self.location.origin);
  // Always this origin: ASKUSER_PUBLIC_URL may name the server differently (localhost, 127.0.0.1).
  var target = new URL(given.pathname + given.search + given.hash, self.location.origin);
  event.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
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
    })
  );
});
