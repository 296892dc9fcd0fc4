"""OpenAPI details drf-spectacular cannot see: every operation documents its error answers
(500 and 503 included), the headers the views read and send (one table), links from a create
to what it created, integer lookups and parameters' patterns; ``postprocess_schema`` makes
request bodies refuse unknown fields. The examples are in ``profiles.api.examples``."""

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer

from profiles.api.serializers.entries import (
    ITEM_PATH_MAX_LENGTH,
    KEY_PATTERN,
    SCENARIO_NAME_MAX_LENGTH,
    ErrorSerializer,
)
from resolver.request import MAX_INPUT_KEYS, MAX_MESSAGE_CHARS

# Status -> when it happens; documented on the operations whose method can produce it.
ERROR_STATUSES = {
    "400": "Invalid request or workspace (`error.path` names the field).",
    "401": "No or invalid credentials.",
    "403": "Authenticated, but not allowed (writes need the editors group or staff).",
    "404": "Not found (`PROFILE_NOT_FOUND`, `REF_NOT_AVAILABLE`, `NOT_FOUND`; a page past "
    "the last one).",
    "406": "No acceptable representation.",
    "409": "Conflicts with stored data (key exists, still in use); with `retryable` and "
    "`Retry-After`, a lock conflict: send the same request again.",
    "412": "Stale `If-Match`: someone else saved first; nothing changed (the `ETag` header "
    "is the current one: re-read, then send again).",
    "413": "Request body too large.",
    "415": "Unsupported media type: bodies are JSON (`application/json`).",
    "429": "Throttled; retry after `Retry-After` seconds.",
    "500": "A server fault (logged); nothing half-written.",
    "503": "The database is unavailable; nothing changed, retry after `Retry-After` seconds.",
}
READ_ERRORS = ("400", "401", "403", "404", "406", "429", "500", "503")
WRITE_ERRORS = (
    "400", "401", "403", "404", "406", "409", "412", "413", "415", "429", "500", "503"
)  # fmt: skip

# --- headers -------------------------------------------------------------------------------
# Which operations read which request header and send which response header: one table, so
# that the schema says what the views do (tests/profiles/api/test_schema_contract.py checks a few).

ENTRIES = ("consumers", "layers", "items", "profiles", "scenarios")
ENTRY_WRITES = [f"{name}_{action}" for name in ENTRIES for action in ("update", "partial_update")]

#: operation id -> whether If-Match is required (absent: the operation does not read it)
IF_MATCH = {
    **dict.fromkeys(ENTRY_WRITES, False),
    **{f"{name}_destroy": False for name in ENTRIES},
    **dict.fromkeys(("rules_update", "rules_partial_update", "rules_destroy"), False),
    "profile_versions_restore": False,
    "change_requests_create": False,  # the profile's ETag, as read before proposing
    "change_requests_partial_update": False,
    "change_requests_approve": True,
}
IF_MATCH_HELP = (
    "The `ETag` you read; a write on a newer state answers 412 and changes nothing "
    "(without it, the write is unconditional)."
)

#: operations answering ``If-None-Match`` with 304 while nothing they depend on changed
CONDITIONAL = ("resolve", "expand", "profiles_retrieve", "workspace_export")

CHANGE_REQUEST_ANSWERS = [
    f"change_requests_{action}"
    for action in ("retrieve", "partial_update", "approve", "reject", "close", "rebase", "apply")
]
#: operation id -> the statuses whose answer carries the object's ``ETag``
ETAG = {
    **{f"{name}_retrieve": ("200",) for name in ENTRIES},
    **{f"{name}_create": ("201",) for name in ENTRIES},
    **dict.fromkeys(ENTRY_WRITES, ("200",)),
    **dict.fromkeys(("rules_retrieve", "rules_update", "rules_partial_update"), ("200",)),
    "profile_versions_restore": ("200", "201"),
    "change_requests_create": ("201",),
    **dict.fromkeys(CHANGE_REQUEST_ANSWERS, ("200",)),
}
#: operation id -> the statuses whose answer names the created resource in ``Location``
LOCATION = {
    **{f"{name}_create": ("201",) for name in ENTRIES},
    **dict.fromkeys(
        (
            "change_requests_create",
            "profile_promote",
            "profile_versions_restore",
            "keys_create",
            "webhooks_create",
        ),
        ("201",),
    ),
    # The job (202), or with propose=true the change request it opened (201).
    "workspace_import": ("201", "202"),
}


#: operations whose body drf-spectacular cannot see is required (a document, not fields)
BODY_REQUIRED = ("workspace_import",)


def header(description: str, *, required: bool = False, schema: dict | None = None) -> dict:
    return {
        "schema": schema or {"type": "string"},
        "required": required,
        "description": description,
    }


ETAG_HEADER = header("The object's version (send it back as `If-Match`).", required=True)
CONTENT_ETAG_HEADER = header(
    "The content version of the answer (send it as `If-None-Match` to be answered 304 "
    "while nothing changed)."
)
RETRY_AFTER = header("Seconds to wait before retrying.", schema={"type": "integer", "minimum": 0})


def request_header(name: str, description: str, *, required: bool = False) -> dict:
    return {
        "in": "header",
        "name": name,
        "required": required,
        "description": description,
        "schema": {"type": "string"},
    }


def add_headers(operation: dict) -> None:
    """Declare the request and response headers the table above gives the operation."""
    operation_id = operation["operationId"]
    parameters = operation.setdefault("parameters", [])
    named = {(parameter["in"], parameter["name"]) for parameter in parameters}
    responses = operation["responses"]

    def response_header(status: str, name: str, value: dict) -> None:
        if status in responses:
            responses[status].setdefault("headers", {})[name] = value

    if operation_id in IF_MATCH and ("header", "If-Match") not in named:
        parameters.append(
            request_header("If-Match", IF_MATCH_HELP, required=IF_MATCH[operation_id])
        )
    if operation_id in CONDITIONAL:
        parameters.append(
            request_header(
                "If-None-Match", "The `ETag` of the answer you hold: 304 while it still holds."
            )
        )
        responses["304"] = {
            "description": "Not modified: the answer you hold (its `ETag`) still holds.",
            "headers": {"ETag": CONTENT_ETAG_HEADER},
        }
        response_header("200", "ETag", CONTENT_ETAG_HEADER)
    for status in ETAG.get(operation_id, ()):
        response_header(status, "ETag", ETAG_HEADER)
    for status in LOCATION.get(operation_id, ()):
        response_header(
            status,
            "Location",
            header("The URL of what was created.", required=True, schema={"type": "string"}),
        )
    if operation_id == "resolve":
        response_header(
            "200",
            "X-Profile-Version",
            header(
                "The resolved profile's version number (absent before its first version).",
                schema={"type": "integer", "minimum": 1},
            ),
        )
        response_header(
            "200",
            "X-Context-Degraded",
            header(
                "Only on an answer given while the database could not be reached "
                "(`database-unavailable`): every served layer the request would read is "
                "unavailable, as an `availability` override would make it.",
                schema={"type": "string", "enum": ["database-unavailable"]},
            ),
        )
    response_header("412", "ETag", header("The current `ETag`: re-read, then send again."))
    response_header("409", "Retry-After", RETRY_AFTER)
    response_header("429", "Retry-After", RETRY_AFTER)
    response_header("503", "Retry-After", RETRY_AFTER)
    if operation_id in BODY_REQUIRED and "requestBody" in operation:
        operation["requestBody"]["required"] = True
    if not parameters:
        del operation["parameters"]


# --- links ---------------------------------------------------------------------------------
# create -> read -> update for the main entities, so that stateful tools can chain them.

#: entry -> (its identity in a created answer, the path parameter naming it)
LINKED_ENTRIES = {
    "consumers": ("key", "key"),
    "layers": ("key", "key"),
    "items": ("path", "path"),
    "profiles": ("key", "key"),
    "scenarios": ("name", "name"),
    "change_requests": ("id", "id"),
}


def add_links(operation: dict) -> None:
    """Link a create's 201 to the read, replace/change and delete of what it created."""
    operation_id = operation["operationId"]
    name = operation_id.removesuffix("_create")
    if name == operation_id or name not in LINKED_ENTRIES or "201" not in operation["responses"]:
        return
    field, parameter = LINKED_ENTRIES[name]
    parameters = {parameter: f"$response.body#/{field}"}
    if name == "items":  # the layer is the create's own path parameter
        parameters["key"] = "$request.path.key"
    links = {}
    for action in ("retrieve", "update", "partial_update", "destroy"):
        links[action.title().replace("_", "")] = {
            "operationId": f"{name}_{action}",
            "parameters": parameters,
            "description": f"The {action.replace('_', ' ')} of what was created.",
        }
    operation["responses"]["201"]["links"] = links


# SPEC §2.2's text rule as a pattern: no NUL (a lone surrogate cannot be sent as UTF-8).
TEXT_RULE_PATTERN = "^[^\\x00]*$"


def follow_text_rule(schema: dict) -> None:
    """Give a text schema (no pattern, enum or format of its own) the text rule's pattern."""
    if schema.get("type") == "string" and not {"pattern", "enum", "format"} & set(schema):
        schema["pattern"] = TEXT_RULE_PATTERN
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        follow_text_rule(schema["items"])


def request_components(result: dict) -> set[str]:
    """Return the names of the components request bodies use, directly or nested."""
    schemas = result.get("components", {}).get("schemas", {})
    names: set[str] = set()

    def visit(node) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[1]
                if name not in names:
                    names.add(name)
                    visit(schemas.get(name))
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    for path in result.get("paths", {}).values():
        for operation in path.values():
            visit(operation.get("requestBody"))
    return names


def _component(schemas: dict, reference: str) -> dict:
    return schemas.get(reference.rsplit("/", 1)[-1], {})


def body_of_shapes_required(operation: dict, schemas: dict) -> None:
    """Mark a request body whose schema is a ``oneOf`` of shapes with required fields as
    required (drf-spectacular sees no required field on the proxy of the shapes)."""
    body = operation.get("requestBody")
    if not isinstance(body, dict) or body.get("required"):
        return
    for media in body.get("content", {}).values():
        shapes = _component(schemas, media.get("schema", {}).get("$ref", "")).get("oneOf")
        if shapes and all(
            _component(schemas, shape.get("$ref", "")).get("required") for shape in shapes
        ):
            body["required"] = True


def postprocess_schema(result, generator, request, public):
    """Tighten the generated schema where drf-spectacular cannot see what the server does.

    * A request body's object components refuse unknown fields (``additionalProperties:
      false``): the views and services answer 400 for any field they do not read. (With
      ``COMPONENT_SPLIT_REQUEST`` a request has components of its own.)
    * A query or path parameter, or a field of a request body, of text follows SPEC §2.2's
      text rule (``TEXT_RULE_PATTERN``: the server answers 400 to a NUL).
    * Only links to operations that exist are kept.
    * A body of several shapes (a ``oneOf`` of components, e.g. a change request of one
      profile or a change set) is required when every shape has required fields.
    """
    schemas = result.get("components", {}).get("schemas", {})
    for path in result.get("paths", {}).values():
        for operation in path.values():
            body_of_shapes_required(operation, schemas)
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter["in"] in ("query", "path"):
                    follow_text_rule(schema)
    for name in request_components(result):
        component = schemas[name]
        if component.get("type") == "object" and "additionalProperties" not in component:
            component["additionalProperties"] = False
        for name, field in component.get("properties", {}).items():
            if name == "input" and field.get("type") == "object":
                # SPEC §3: a flat object of text, numbers, booleans and nulls.
                field["additionalProperties"] = {
                    "oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}],
                    "nullable": True,
                }
                field["maxProperties"] = MAX_INPUT_KEYS
                field["properties"] = {
                    "message": {
                        "type": "string",
                        "nullable": True,
                        "maxLength": MAX_MESSAGE_CHARS,
                        "pattern": TEXT_RULE_PATTERN,
                        "description": "The user's message.",
                    }
                }
            if name == "now" and field.get("type") == "string":
                # A request's instant (SPEC §3): what a client sends is a date-time (the
                # server also reads a bare date); answers echo what was saved.
                field["format"] = "date-time"
            follow_text_rule(field)
    operation_ids = {
        operation["operationId"]
        for path in result.get("paths", {}).values()
        for operation in path.values()
    }
    for path in result.get("paths", {}).values():
        for operation in path.values():
            for response in operation.get("responses", {}).values():
                links = response.get("links")
                for link in list(links or ()):
                    if links[link]["operationId"] not in operation_ids:
                        del links[link]
    return result


class ApiAutoSchema(AutoSchema):
    """drf-spectacular's schema plus the error shape on every operation, the headers the
    views read and send, and links from a create to what it created; a viewset's operation
    ids and answers follow from its ``operation_prefix`` and ``record_serializer``."""

    def get_operation_id(self):
        """Return ``<operation_prefix>_<action>`` for a viewset that names its prefix (an id
        the action's ``extend_schema`` gives wins)."""
        prefix = getattr(self.view, "operation_prefix", "")
        action = getattr(self.view, "action", None)
        if prefix and action:
            return f"{prefix}_{action}"
        return super().get_operation_id()

    def get_response_serializers(self):
        """Return the answers of a viewset that names its ``record_serializer``: a page of
        records (``list``), the record created (201), nothing (a delete's 204) or the record
        (any other action); what the action's ``extend_schema`` gives wins."""
        record = getattr(self.view, "record_serializer", None)
        if record is None:
            return super().get_response_serializers()
        action = getattr(self.view, "action", None)
        if action == "list":
            return {200: record(many=True)}
        if action == "create":
            return {201: record}
        if action == "destroy":
            return {204: None}
        return {200: record}

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is not None:
            self.constrain_path_parameters(operation)
            self.type_numeric_lookup(operation)
            add_headers(operation)
            add_links(operation)
        return operation

    def constrain_path_parameters(self, operation: dict) -> None:
        """Declare what a path parameter must be: a key's pattern, a path's or a name's
        length (a value the server could never store answers 400 or 404)."""
        for parameter in operation.get("parameters", []):
            if parameter["in"] != "path":
                continue
            if parameter["name"] in ("key", "layer"):
                parameter["schema"] = {"type": "string", "pattern": KEY_PATTERN, "maxLength": 64}
            elif parameter["name"] == "path":
                parameter["schema"] = {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": ITEM_PATH_MAX_LENGTH,
                }
            elif parameter["name"] == "name":
                parameter["schema"] = {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": SCENARIO_NAME_MAX_LENGTH,
                }

    def type_numeric_lookup(self, operation: dict) -> None:
        """Declare a lookup the URL takes as digits (change request ids, version numbers)
        an integer from 1, as the bodies carry it."""
        if getattr(self.view, "lookup_value_regex", None) != "[0-9]+":
            return
        lookup = getattr(self.view, "lookup_url_kwarg", None) or self.view.lookup_field
        names = {lookup, "id"} if lookup == "pk" else {lookup}
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path" and parameter["name"] in names:
                parameter["schema"] = {"type": "integer", "minimum": 1}

    def map_parsers(self):
        return [
            media_type
            for media_type in super().map_parsers()
            if media_type in ("application/json", "application/yaml")
        ]

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        statuses = READ_ERRORS if self.method in ("GET", "HEAD") else WRITE_ERRORS
        for status in statuses:
            if status not in responses:
                response = self._get_response_for_code(ErrorSerializer, status, direction=direction)
                response["description"] = ERROR_STATUSES[status]
                responses[status] = response
        return responses


class ApiDocsView(SpectacularSwaggerSplitView):
    """The Swagger UI page (its script served as a file). OPTIONS describes it in JSON: the
    page's template renderer has no template for a description (a 500, issue 18).

    The page is the studio's template (``api/swagger_ui.html``): drf-spectacular's, with a
    ``lang`` and a stylesheet that darkens Swagger's colours below AA contrast (issue 23)."""

    template_name = "api/swagger_ui.html"

    def perform_content_negotiation(self, request, force=False):
        if request.method == "OPTIONS":
            return JSONRenderer(), JSONRenderer.media_type
        return super().perform_content_negotiation(request, force)
