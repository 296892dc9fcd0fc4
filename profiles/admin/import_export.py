"""Background task results (workspace imports), shown to staff."""

from django.contrib import admin
from django_tasks_db.admin import DBTaskResultAdmin
from django_tasks_db.models import DBTaskResult

from profiles.workspace.permissions import ADMINISTER, user_can

# Background task results (workspace imports) are shown to staff; nobody adds, changes or
# deletes them here (the package's own rule).
admin.site.unregister(DBTaskResult)


@admin.register(DBTaskResult)
class AdministeredTaskResultAdmin(DBTaskResultAdmin):
    def has_module_permission(self, request) -> bool:
        return user_can(request.user, ADMINISTER)

    def has_view_permission(self, request, obj=None) -> bool:
        return user_can(request.user, ADMINISTER)
