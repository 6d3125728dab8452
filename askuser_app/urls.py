from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import views
from .chat import pushviews
from .chat import views as chat_views

urlpatterns = [
    path("", views.sessions_list, name="sessions"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("s/<str:key>/", views.session_page, name="session"),
    path("s/<str:key>/messages", views.post_message, name="post_message"),
    path("s/<str:key>/prompts/<uuid:prompt_id>/answer", views.answer_prompt, name="answer_prompt"),
    path("p/<uuid:prompt_id>/", views.prompt_page, name="prompt"),
    path("settings/", views.settings_page, name="settings"),
    path("settings/chat/", chat_views.chat_settings, name="chat_settings"),
    path("settings/push/key", pushviews.key, name="push_key"),
    path("settings/push/subscribe", pushviews.subscribe, name="push_subscribe"),
    path("settings/push/unsubscribe", pushviews.unsubscribe, name="push_unsubscribe"),
    path("settings/push/remove", pushviews.remove, name="push_remove"),
    path("settings/push/test", pushviews.test, name="push_test"),
    path("sw.js", pushviews.service_worker, name="service_worker"),
    path("chat/", include("askuser_app.chat.urls")),
]
