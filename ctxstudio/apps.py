from django.apps import AppConfig


class ContextStudioConfig(AppConfig):
    """The project's own glue: login lockout answers and their admin (see login_lockout)."""

    name = "ctxstudio"
    verbose_name = "Context Studio"

    def ready(self):
        from ctxstudio import checks, log_context, login_lockout  # noqa: F401 -- registers them
