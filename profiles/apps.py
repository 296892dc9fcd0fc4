from django.apps import AppConfig


class ProfilesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "profiles"
    verbose_name = "Context profiles"

    def ready(self):
        # The writes that make a held API key wrong move the shared stamp (its signals), in
        # every process, whichever door writes (the admin, the studio, a command).
        from profiles.workspace import key_cache  # noqa: F401
