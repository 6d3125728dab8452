"""Django admin for staff."""

from __future__ import annotations

from django.contrib import admin

from .models import WebhookAttempt, WebhookDelivery

# --- webhooks: every delivery and each of its attempts, read-only -------------------------


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ["number", "started_at", "duration_ms", "status_code", "error", "response_excerpt"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["prompt", "url", "status", "attempt_count", "created_at", "next_attempt_at", "finished_at"]
    list_filter = ["status", "created_at"]
    search_fields = ["url", "prompt__id", "prompt__session__key"]
    list_select_related = ["prompt__session"]
    readonly_fields = [
        "prompt",
        "url",
        "status",
        "attempt_count",
        "created_at",
        "next_attempt_at",
        "finished_at",
        "body",
    ]
    inlines = [WebhookAttemptInline]
