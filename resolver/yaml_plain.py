"""What the YAML reader (``resolver.documents``) and writer (``resolver.yaml_writer``) share.

Both take a fast path for plain data (str, int, float, bool, None, dict, list) through
libyaml and leave anything else to PyYAML's own classes: the core tags of plain nodes, a
quicker copy of PyYAML's tag resolution (``_QuickResolving``, mixed into libyaml's loader
and dumper), the exception that hands a document back to PyYAML (``_NotPlain``), and the
pause of the cyclic garbage collector while a large document's objects are built
(``collection_paused``).

An edge module like the two that use it: ``import resolver`` does not load it (or PyYAML).
"""

import contextlib
import gc

import yaml
from yaml.nodes import ScalarNode, SequenceNode

_STR_TAG = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"


class _NotPlain(Exception):
    """A document or node graph holds something the plain fast path leaves to PyYAML.

    Raised by ``resolver.documents._construct_plain`` (reading) and
    ``resolver.yaml_writer._dump_plain`` (writing).
    """


class _QuickResolving:
    """PyYAML's tag resolution, in fewer steps: libyaml calls it for every node it reads and
    twice for every scalar it writes.

    The same implicit resolvers (a copy taken at import, by first character) and the same
    default tags; the safe loader and dumper have no path resolvers, so that step is left out.
    """

    def resolve(self, kind, value, implicit):
        if kind is ScalarNode:
            if implicit[0]:
                for tag, regexp in _IMPLICIT_RESOLVERS.get(value[:1], _ANY_FIRST_RESOLVERS):
                    if regexp.match(value):
                        return tag
            return _STR_TAG
        return _SEQ_TAG if kind is SequenceNode else _MAP_TAG


_ANY_FIRST_RESOLVERS = tuple(yaml.resolver.Resolver.yaml_implicit_resolvers.get(None, ()))
_IMPLICIT_RESOLVERS = {
    first: (*resolvers, *_ANY_FIRST_RESOLVERS)
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
    if first is not None
}


@contextlib.contextmanager
def collection_paused():
    """Pause the cyclic garbage collector while a large document's objects are built.

    Each collection pass walks every object still alive, so building a document of a
    million objects with the collector on costs several times the building itself. Objects
    are still freed by reference counting; the collector resumes afterwards (unless it was
    already off).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
