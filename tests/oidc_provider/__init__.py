"""A real OpenID Connect provider for the single sign-on tests: a small Django project with
django-oauth-toolkit, started on loopback by ``tests.oidc_provider.running``.

It is no part of Context Studio: its own settings, its own SQLite file, its own process.
"""
