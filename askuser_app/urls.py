from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from askuser_app.delivery import channels
from askuser_app.delivery.channels.chats import views as chat_views
from askuser_app.web import views

urlpatterns = [
    path("", views.sessions_list, name="sessions"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("s/<str:key>/", views.session_page, name="session"),
    path("s/<str:key>/messages", views.post_message, name="post_message"),
    path("s/<str:key>/mute", views.mute_session, name="session_mute"),
    path("s/<str:key>/prompts/<uuid:prompt_id>/answer", views.answer_prompt, name="answer_prompt"),
    path("s/<str:key>/prompts/<uuid:prompt_id>/extend", views.extend_prompt, name="extend_prompt"),
    path("p/<uuid:prompt_id>/", views.prompt_page, name="prompt"),
    path("inbox/", views.inbox_page, name="inbox"),
    path("settings/", views.settings_page, name="settings"),
    path("settings/chat/", chat_views.chat_settings, name="chat_settings"),
    path("settings/agents/", views.settings_agents, name="settings_agents"),
    path("language/", views.set_language, name="set_language"),
    path("manifest.webmanifest", views.manifest, name="manifest"),
    # The Control UI's JavaScript strings in the page's language (a script file: no inline script).
    path("jsi18n/", JavaScriptCatalog.as_view(packages=["askuser_app"]), name="javascript_catalog"),
    path("chat/", include("askuser_app.delivery.channels.chats.urls")),
    # Each notifier folder's own routes (/settings/email/, /settings/push/…, /sw.js).
    *[path("", include(module)) for module in channels.url_modules()],
]
