"""Login lockouts in the admin: axes' failure log, with an action that lifts a lockout."""

from axes.admin import AccessFailureLogAdmin
from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessFailureLog
from django.contrib import admin


@admin.register(AccessFailureLog)
class LoginLockoutAdmin(AccessFailureLogAdmin):
    actions = ["unlock"]

    @admin.action(
        description="Unlock: clear the failures of the selected username at that address",
        permissions=["change"],
    )
    def unlock(self, request, queryset):
        for lockout in queryset:
            AxesProxyHandler.reset_attempts(
                ip_address=lockout.ip_address, username=lockout.username
            )
        self.message_user(request, f"Unlocked {queryset.count()} username(s) at their address.")
