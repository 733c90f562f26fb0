"""What a route handler takes and answers, written above it with @documented, for the OpenAPI document.

Rules:
- Every handler of the core's route table carries @documented; openapi.py walks the table and reads it, so a
  new route is two edits: its line in the table and its handler. tests/test_openapi.py fails on a route
  without it.
- @documented only attaches a dict to the handler: nothing here runs on a request, and this module imports
  nothing but typing, so that every handler module can import it at no cost.
- Whether a route needs a key is not written here: openapi.py reads it from the route's own options.
- Shapes several routes answer with are components of the document (openapi.py), named here with ref().
"""
from __future__ import annotations

from typing import Callable, Optional

STRING, INTEGER, BOOLEAN, ANY = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {}
DATE = {"type": "string", "format": "date-time", "description": "ISO 8601; without an offset it is UTC"}
ID = {"type": "string", "minLength": 1}


def ref(name: str) -> dict:
    """A schema of the document's components (openapi.py's component_schemas)."""
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(kind: str) -> dict:
    return {"type": [kind, "null"]}


def object_schema(required: dict, optional: Optional[dict] = None, **extra: object) -> dict:
    """An object schema: `required` properties always present, `optional` ones sometimes."""
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required), **extra}


def array_of(items: dict) -> dict:
    return {"type": "array", "items": items}


def json_body(schema: dict, description: str = "") -> dict:
    """A request or response body of JSON with this schema."""
    answer = {"content": {"application/json": {"schema": schema}}}
    return {"description": description, **answer} if description else answer


def parameter(where: str, name: str, description: str, required: bool = False,
              schema: Optional[dict] = None) -> dict:
    """A parameter `where` ("path", "query", "header"); a path's is always required."""
    return {"name": name, "in": where, "required": required or where == "path", "description": description,
            "schema": schema or STRING}


POST_ID, CHANNEL_ID = parameter("path", "id", "A post id"), parameter("path", "id", "A channel id")


def operation_documentation(summary: str, answer: tuple, errors: str = "", parameters: tuple = (),
                            request: Optional[dict] = None, more_answers: Optional[dict] = None) -> dict:
    """What @documented attaches, and openapi.py makes an operation of (see documented)."""
    return {"summary": summary, "answer": answer, "errors": errors, "parameters": parameters, "request": request,
            "more_answers": more_answers or {}}


def documented(summary: str, answer: tuple, errors: str = "", parameters: tuple = (),
               request: Optional[dict] = None, more_answers: Optional[dict] = None) -> Callable:
    """The handler's operation in the OpenAPI document.

    `answer` is its success, (status, a schema of JSON or a whole response); `errors` names the document's
    shared responses it may give ("NotFound Conflict"); `parameters` may name path parameters that only some
    of the handler's paths have (/mcp and /mcp/:apiKey): each path takes those of its template. `request` is
    the body (a schema of JSON, or a whole requestBody); `more_answers` other answers, {status: response}."""
    description = operation_documentation(summary, answer, errors, parameters, request, more_answers)

    def mark(handler: Callable) -> Callable:
        handler.openapi = description
        return handler
    return mark
