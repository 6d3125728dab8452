"""``{% email_settings_of user as email %}``: the settings page's email section, for its partial."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django import template

from askuser_app.delivery.notifiers.email.views import EmailSettings, email_settings

if TYPE_CHECKING:
    from django.contrib.auth.models import User

register = template.Library()


@register.simple_tag
def email_settings_of(user: User) -> EmailSettings:
    return email_settings(user)
