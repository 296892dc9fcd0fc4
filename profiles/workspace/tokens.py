"""A user's API token: read, replace and revoke it (the studio's token page), and its lookup
by key on every API request that carries one.

The token is how a user signs in to the API, whichever door shows it: like the permissions, it
belongs to no feature.

The lookup by key is compiled once per process: DRF's ``TokenAuthentication`` builds the
token-and-user query with the ORM each time (``select_related("user").get(key=…)``), which
cost about a tenth of a resolve request under gunicorn. Here the ORM compiles the same
statement once per database and the rows become the same model instances (``Model.from_db``),
so the answer and the one query are DRF's. That goes below the queryset API (a compiler, its
value converters, a cursor), so it is explained here rather than kept among the selectors.
"""

import functools

from django.contrib.auth import get_user_model
from django.db import connections, router, transaction
from rest_framework.authtoken.models import Token


def user_token_get(*, user) -> Token | None:
    """Return the user's token, or None."""
    return Token.objects.filter(user=user).first()


def token_replace(*, user) -> Token:
    """Create a new token for the user, replacing the old one."""
    with transaction.atomic():
        # Posts of one user (a double click, two tabs) take turns on the user's row: each
        # replaces the token the one before made, and the last page shows the one that works.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def token_revoke(*, user) -> bool:
    """Delete the user's token; return whether there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


# --- the lookup by key, on every API request ----------------------------------------------

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


def token_by_key_get(key: str) -> Token | None:
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
