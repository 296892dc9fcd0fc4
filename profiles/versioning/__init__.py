"""Versioning: every profile's versions (``versions``: the recorder every profile write calls),
the environments and their protection (``environments``), and the guard every material and
authoring write calls before it writes (``protection``). It stands below material and
authoring, which call it; safe change's workflows, which call them, stand above."""
