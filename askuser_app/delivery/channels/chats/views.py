"""``/settings/chat/``: each chat channel's status for the logged-in person, link codes, unlink."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from askuser_app.delivery import channels
from askuser_app.delivery.channels.chats import core
from askuser_app.models import ChatLink

if TYPE_CHECKING:
    from askuser_app.runtime.http import LoggedInRequest


@dataclass(frozen=True)
class ChannelRow:
    name: str
    label: str
    configured: bool
    link: ChatLink | None
    code: str = ""
    how_to_link: str = ""


def _rows(request: LoggedInRequest, code_for: str = "", code: str = "") -> list[ChannelRow]:
    installed, configured = channels.installed_chat_apps(), channels.configured_chat_apps()
    links = {k.channel: k for k in ChatLink.objects.filter(user=request.user)}
    rows = []
    for name in channels.chat_apps():
        adapter = installed.get(name)
        how = adapter.how_to_link(code) if adapter is not None and name == code_for else ""
        rows.append(
            ChannelRow(
                name=name,
                label=channels.label_of(name),
                configured=name in configured,
                link=links.get(name),
                code=code if name == code_for else "",
                how_to_link=how,
            )
        )
    return rows


@login_required
def chat_settings(request: LoggedInRequest) -> HttpResponse:
    """GET: the channels. POST ``action=code``: a new one-time code; ``action=unlink``: forget the link."""
    if request.method != "POST":
        return render(request, "askuser/chat_settings.html", {"channels": _rows(request)})
    channel = request.POST.get("channel", "")
    if channel not in channels.configured_chat_apps():
        messages.error(request, _("This chat app is not set up on this server."))
        return redirect("chat_settings")
    if request.POST.get("action") == "unlink":
        deleted, _rows_deleted = ChatLink.objects.filter(user=request.user, channel=channel).delete()
        if deleted:
            messages.info(request, _("Unlinked from %(channel)s.") % {"channel": channels.label_of(channel)})
        return redirect("chat_settings")
    if request.POST.get("action") == "code":
        code = core.new_code(request.user, channel)
        context = {"channels": _rows(request, channel, code), "code_channel": channel}
        return render(request, "askuser/chat_settings.html", context)
    messages.error(request, _("Choose Get a link code or Unlink."))
    return redirect("chat_settings")
