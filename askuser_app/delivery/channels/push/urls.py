"""Web Push's routes: this person's devices, under ``/settings/push/``, the service worker, and its
buttons' taps, under ``/push/``."""

from __future__ import annotations

from django.urls import path

from askuser_app.delivery.channels.push import views

urlpatterns = [
    path("settings/push/key", views.key, name="push_key"),
    path("settings/push/subscribe", views.subscribe, name="push_subscribe"),
    path("settings/push/unsubscribe", views.unsubscribe, name="push_unsubscribe"),
    path("settings/push/remove", views.remove, name="push_remove"),
    path("settings/push/test", views.test, name="push_test"),
    path("settings/push/grace", views.grace, name="push_grace"),
    path("sw.js", views.service_worker, name="service_worker"),
    path("push/answer", views.answer, name="push_answer"),
    path("push/mute", views.mute, name="push_mute"),
]
