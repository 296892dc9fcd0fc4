"""The database router of a read replica (``DATABASE_REPLICA_URL``; installed only then).

Writes, migrations and every read outside ``profiles.workspace.replica.replica_reads`` use the
primary (``default``). Inside it (the read-only API's list and detail reads, once the replica
has applied every recorded write and does not lag), reads of the workspace's material, whose
every write bumps the counter the replica is checked against, go to the replica; reads of
anything else (users, keys, sessions, scenarios, history) stay on the primary.
"""

from profiles.models import Consumer, Item, ItemKey, ItemTerms, Layer, Profile, Rule
from profiles.workspace import replica

# The models whose writes all go through ``writing.workspace_changed`` (the counter moves).
MATERIAL = frozenset({Consumer, Layer, Item, ItemKey, ItemTerms, Profile, Rule})


class ReplicaRouter:
    def db_for_read(self, model, **hints):
        if model in MATERIAL and replica.routed():
            return replica.ALIAS
        return "default"

    def db_for_write(self, model, **hints):
        return "default"

    def allow_relation(self, obj1, obj2, **hints):
        return True

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db != replica.ALIAS
