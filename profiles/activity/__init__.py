"""The activity log: every write to any entity, from any door, recorded once (``records``)."""
