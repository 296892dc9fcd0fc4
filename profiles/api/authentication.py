"""Token authentication: DRF's, with the token's lookup compiled once per process.

Every API request that carries a token reads the token and its user. DRF builds that query
with the ORM each time (``select_related("user").get(key=…)``); compiling it cost about a
tenth of a resolve request under gunicorn. Here the ORM compiles the same statement once and
the rows become the same model instances (``Model.from_db``), so the answers, the error
messages and the one query are DRF's.
"""

import functools

from django.db import connections, router
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

# A key that no token has: it only stands for the parameter while the statement is compiled.
_KEY_PLACEHOLDER = "-"


@functools.cache
def _token_statement(alias: str):
    """Return the SQL of the token-and-user lookup, its compiler (for the database's value
    converters) and how many of its columns are the token's."""
    queryset = Token.objects.using(alias).select_related("user").filter(key=_KEY_PLACEHOLDER)
    compiler = queryset.query.get_compiler(using=alias)
    sql, params = compiler.as_sql()
    assert params == (_KEY_PLACEHOLDER,), params
    converters = compiler.get_converters([column[0] for column in compiler.select])
    return sql, compiler, converters, len(Token._meta.concrete_fields)


def token_get(key: str) -> Token | None:
    """Return the token with this key, its user loaded, or None (one query)."""
    alias = router.db_for_read(Token)
    sql, compiler, converters, token_columns = _token_statement(alias)
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, [key])
        row = cursor.fetchone()
    if row is None:
        return None
    if converters:  # SQLite's dates, for instance
        row = next(iter(compiler.apply_converters([row], converters)))
    token = Token.from_db(alias, None, row[:token_columns])
    user_model = Token._meta.get_field("user").related_model
    token.user = user_model.from_db(alias, None, row[token_columns:])
    return token


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key):
        token = token_get(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
