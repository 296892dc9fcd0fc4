"""The API token's lookup, compiled once per process: a selector on the hot path of every API
request that carries a token.

DRF's ``TokenAuthentication`` builds the token-and-user query with the ORM each time
(``select_related("user").get(key=…)``); compiling it cost about a tenth of a resolve request
under gunicorn. Here the ORM compiles the same statement once per database and the rows become
the same model instances (``Model.from_db``), so the answer and the one query are DRF's. It is
a module of its own, not a function of ``selectors``, because it goes below the queryset API
(a compiler, its value converters, a cursor) and that machinery needs a reader's attention.
"""

import functools

from django.db import connections, router
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
