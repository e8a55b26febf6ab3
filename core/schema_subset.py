"""The JSON Schema subset of structured output, compiled to msgspec types (wire-format §7.7).

Rules of this module:

* Supported keywords: ``type`` (one of object/array/string/number/integer/boolean/null),
  ``properties``, ``required``, ``additionalProperties`` (boolean), ``items``, ``enum`` and
  ``const`` (scalar, of the node's type), ``minimum``/``maximum``/``exclusiveMinimum``/
  ``exclusiveMaximum`` (number, integer), ``minLength``/``maxLength`` (string),
  ``minItems``/``maxItems`` (array) and the ``description`` annotation. A node without ``type``
  and without constraints accepts any JSON value. The root must be ``type: "object"``.
* Anything else is refused, and every violation is reported at once, with its path
  (``schema.properties.x.type …``), before any child exists: a keyword that would be accepted
  but not enforced would silently weaken the contract.
* A valid schema compiles to msgspec types (``msgspec.defstruct`` for objects, ``Literal`` for
  enum/const, ``Annotated[…, Meta(…)]`` for bounds), so msgspec decides whether arguments are
  valid. msgspec stops at the first error; when a value is refused, the schema is walked once
  more to list every violation: objects report each missing or undeclared property and recurse
  into every declared one, arrays recurse into every item, and each scalar is checked by msgspec
  against its own compiled type. Messages are msgspec's, with a ``$`` path.
* Limits: number ``enum``/``const`` values must be integers (``Literal`` holds no floats), and
  integer values are bounded to the JavaScript safe range, like every integer on DSH's wire.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

import msgspec
from msgspec import UNSET, Meta, UnsetType

from .events import MAX_SAFE_INTEGER

__all__ = ["SCHEMA_KEYWORDS", "MAX_SCHEMA_DEPTH", "SchemaNode", "check_schema", "compile_schema",
           "value_violations"]

_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
_SCALARS = frozenset({"string", "number", "integer", "boolean", "null"})
_NUMERIC_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
#: Which types each constraint keyword may sit on.
_ALLOWED_ON: dict[str, frozenset[str]] = {
    "properties": frozenset({"object"}),
    "required": frozenset({"object"}),
    "additionalProperties": frozenset({"object"}),
    "items": frozenset({"array"}),
    "minItems": frozenset({"array"}),
    "maxItems": frozenset({"array"}),
    "minLength": frozenset({"string"}),
    "maxLength": frozenset({"string"}),
    "enum": _SCALARS,
    "const": _SCALARS,
    **{bound: frozenset({"number", "integer"}) for bound in _NUMERIC_BOUNDS},
}
#: Every keyword of the subset.
SCHEMA_KEYWORDS = frozenset({"type", "description", *_ALLOWED_ON})
#: Deepest nesting accepted (a guard against runaway recursion, far above real schemas).
MAX_SCHEMA_DEPTH = 64
_SUBSET_HINT = ("subset: type/properties/required/additionalProperties/items/enum/const/"
                "minimum/maximum/exclusiveMinimum/exclusiveMaximum/minLength/maxLength/"
                "minItems/maxItems + description")


class SchemaNode(msgspec.Struct, frozen=True, kw_only=True, eq=False):
    """One compiled schema node: its msgspec type plus what the violation walk needs."""

    kind: str
    #: The msgspec type of this whole subtree.
    type: Any
    #: Container-only type (object or array, with length bounds) for the violation walk.
    shape: Any = None
    properties: tuple[tuple[str, SchemaNode], ...] = ()
    required: tuple[str, ...] = ()
    closed: bool = False
    items: SchemaNode | None = None


# --------------------------------------------------------------------------- schema checks


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE_INTEGER


def _matches(kind: str, value: object) -> bool:
    """Whether a schema constant is a value of ``kind`` (integral numbers count as integers)."""
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    # Literal holds no floats, so number constants must be integral too (module rules).
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    integral = isinstance(value, int) or value.is_integer()
    return integral and abs(value) <= MAX_SAFE_INTEGER


def _admits(node: dict[str, Any], value: Any) -> bool:
    """Whether a scalar constant satisfies ``node``'s bounds and const."""
    if "const" in node and node["const"] != value:
        return False
    if isinstance(value, str):
        return bool(node.get("minLength", 0) <= len(value) <= node.get("maxLength", math.inf))
    if type(value) in (int, float):
        return bool(value >= node.get("minimum", -math.inf)
                    and value <= node.get("maximum", math.inf)
                    and value > node.get("exclusiveMinimum", -math.inf)
                    and value < node.get("exclusiveMaximum", math.inf))
    return True


def _check_keywords(node: dict[str, Any], path: str, kind: str, out: list[str]) -> None:
    for key in node:
        if key not in SCHEMA_KEYWORDS:
            out.append(f"{path}.{key} is not a supported keyword ({_SUBSET_HINT})")
        elif key in _ALLOWED_ON and kind not in _ALLOWED_ON[key]:
            out.append(f"{path}.{key} requires type" if kind == "any"
                       else f'{path}.{key} is not supported on type "{kind}"')
    if "description" in node and not isinstance(node["description"], str):
        out.append(f"{path}.description must be a string")


def _check_bounds(node: dict[str, Any], path: str, kind: str, out: list[str]) -> bool:
    """Append bound violations; ``True`` when the bounds are well formed and consistent."""
    before = len(out)
    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        if key in node and not _is_count(node[key]):
            out.append(f"{path}.{key} must be a non-negative integer")
    for key in _NUMERIC_BOUNDS:
        if key in node and not (_is_number(node[key])
                                and (kind != "integer" or abs(node[key]) <= MAX_SAFE_INTEGER)):
            out.append(f"{path}.{key} must be a finite number"
                       + (" in the safe-integer range" if kind == "integer" else ""))
    if len(out) > before:
        return False
    empty = (node.get("minLength", 0) > node.get("maxLength", math.inf)
             or node.get("minItems", 0) > node.get("maxItems", math.inf))
    if kind == "integer":
        low, high = _integer_bounds(node)
        empty = empty or low > high
    else:
        (low, low_open), (high, high_open) = _lower(node), _upper(node)
        empty = empty or low > high or (low == high and (low_open or high_open))
    if empty:
        out.append(f"{path} admits no value (its bounds exclude each other)")
        return False
    return True


def _check_object(node: dict[str, Any], path: str, depth: int, out: list[str]) -> None:
    properties = node.get("properties", {})
    if not isinstance(properties, dict):
        out.append(f"{path}.properties must be an object of schemas")
        properties = {}
    for key, child in properties.items():
        _check(child, f"{path}.properties.{key}", depth + 1, out)
    if "required" in node:
        required = node["required"]
        if not isinstance(required, list) or not all(isinstance(k, str) for k in required):
            out.append(f"{path}.required must be an array of strings")
        else:
            out.extend(f'{path}.required names "{key}" which is not in properties'
                       for key in required if key not in properties)
    if "additionalProperties" in node and type(node["additionalProperties"]) is not bool:
        out.append(f"{path}.additionalProperties must be a boolean")


def _check_scalar(node: dict[str, Any], path: str, kind: str, out: list[str]) -> None:
    noun = "integer" if kind == "number" else kind
    if "enum" in node:
        allowed = node["enum"]
        if not (isinstance(allowed, list) and allowed
                and all(_matches(kind, value) for value in allowed)):
            out.append(f"{path}.enum must be a non-empty array of {noun} values")
            return
    if "const" in node and not _matches(kind, node["const"]):
        out.append(f"{path}.const must be a {noun} value")
        return
    if ("enum" in node or "const" in node) and not _literal_values(node):
        out.append(f"{path} admits no value (enum/const and bounds exclude each other)")


def _check(node: object, path: str, depth: int, out: list[str]) -> None:
    """Append every subset violation of one raw schema node (and its children) to ``out``."""
    if not isinstance(node, dict):
        out.append(f"{path} must be a schema object")
        return
    if depth > MAX_SCHEMA_DEPTH:
        out.append(f"{path} nests deeper than {MAX_SCHEMA_DEPTH} levels")
        return
    kind = node.get("type", "any")
    if "type" in node and kind not in _TYPES:
        out.append(f"{path}.type must be a single type string (type arrays are not supported)"
                   if isinstance(kind, list) else f"{path}.type must be one of {'/'.join(_TYPES)}")
        return
    before = len(out)
    _check_keywords(node, path, kind, out)
    if len(out) > before:
        return
    if kind == "object":
        _check_object(node, path, depth, out)
    elif kind == "array":
        if "items" in node:
            _check(node["items"], f"{path}.items", depth + 1, out)
        _check_bounds(node, path, kind, out)
    elif kind in _SCALARS and _check_bounds(node, path, kind, out):
        _check_scalar(node, path, kind, out)


def check_schema(schema: object) -> list[str]:
    """Every way ``schema`` (decoded JSON) falls outside the object-rooted subset, in walk order.

    >>> check_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    []
    >>> check_schema({"type": "object", "properties": {"n": {"type": "integer", "min": 1}}})[0]
    ... # doctest: +ELLIPSIS
    'schema.properties.n.min is not a supported keyword (subset: type/properties/...)'

    (The hint in parentheses lists every keyword of the subset.)
    """
    out: list[str] = []
    _check(schema, "schema", 0, out)
    if not out and (not isinstance(schema, dict) or schema.get("type") != "object"):
        out.append('schema.type must be "object" (structured output is object-rooted)')
    return out


# --------------------------------------------------------------------------- compilation


def _integer_bounds(node: dict[str, Any]) -> tuple[int | float, int | float]:
    low, high = -math.inf, math.inf
    if "minimum" in node:
        low = max(low, math.ceil(node["minimum"]))
    if "exclusiveMinimum" in node:
        low = max(low, math.floor(node["exclusiveMinimum"]) + 1)
    if "maximum" in node:
        high = min(high, math.floor(node["maximum"]))
    if "exclusiveMaximum" in node:
        high = min(high, math.ceil(node["exclusiveMaximum"]) - 1)
    return low, high


def _literal_values(node: dict[str, Any]) -> tuple[Any, ...]:
    """The constants a scalar node admits: enum ∩ const ∩ bounds, integral numbers as ints."""
    values = node["enum"] if "enum" in node else [node["const"]]
    kind = node["type"]
    if kind in ("integer", "number"):
        values = [int(value) for value in values]
    return tuple(dict.fromkeys(value for value in values if _admits(node, value)))


def _meta(**constraints: int | float | None) -> Meta | None:
    given = {key: value for key, value in constraints.items()
             if value is not None and not math.isinf(value)}
    return Meta(**given) if given else None  # type: ignore[call-overload]


def _with(base: Any, meta: Meta | None) -> Any:
    return base if meta is None else Annotated[base, meta]


def _lower(node: dict[str, Any]) -> tuple[int | float, bool]:
    """The tighter lower bound of a number node and whether it is exclusive."""
    minimum = node.get("minimum", -math.inf)
    exclusive = node.get("exclusiveMinimum", -math.inf)
    return (exclusive, True) if "exclusiveMinimum" in node and exclusive >= minimum \
        else (minimum, False)


def _upper(node: dict[str, Any]) -> tuple[int | float, bool]:
    """The tighter upper bound of a number node and whether it is exclusive."""
    maximum = node.get("maximum", math.inf)
    exclusive = node.get("exclusiveMaximum", math.inf)
    return (exclusive, True) if "exclusiveMaximum" in node and exclusive <= maximum \
        else (maximum, False)


def _number_meta(node: dict[str, Any]) -> Meta | None:
    (low, low_open), (high, high_open) = _lower(node), _upper(node)
    return _meta(**{"gt" if low_open else "ge": low, "lt" if high_open else "le": high})


def _compile_scalar(node: dict[str, Any], kind: str) -> Any:
    if "enum" in node or "const" in node:
        return Literal[_literal_values(node)]
    if kind == "string":
        return _with(str, _meta(min_length=node.get("minLength"), max_length=node.get("maxLength")))
    if kind == "integer":
        low, high = _integer_bounds(node)
        return _with(int, _meta(ge=low, le=high))
    if kind == "number":
        return _with(float, _number_meta(node))
    return bool if kind == "boolean" else None


def _compile_object(node: dict[str, Any]) -> SchemaNode:
    properties = tuple((key, _compile(child)) for key, child in node.get("properties", {}).items())
    required = tuple(dict.fromkeys(node.get("required", ())))
    closed = node.get("additionalProperties") is False
    if not properties:
        shape: Any = dict[str, Any]
        return SchemaNode(kind="object", type=_with(shape, Meta(max_length=0) if closed else None),
                          shape=shape, required=required, closed=closed)
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for index, (key, child) in enumerate(properties):
        name = f"f{index}"
        fields.append((name, child.type) if key in required
                      else (name, Union[child.type, UnsetType], UNSET))  # noqa: UP007
    struct = msgspec.defstruct(
        "StructuredObject", fields, kw_only=True, frozen=True, forbid_unknown_fields=closed,
        rename={f"f{index}": key for index, (key, _) in enumerate(properties)})
    return SchemaNode(kind="object", type=struct, shape=dict[str, Any], properties=properties,
                      required=required, closed=closed)


def _compile(node: dict[str, Any]) -> SchemaNode:
    """The msgspec types of a node that :func:`check_schema` accepted."""
    kind = node.get("type", "any")
    if kind == "object":
        return _compile_object(node)
    if kind == "array":
        items = _compile(node["items"]) if "items" in node else None
        length = _meta(min_length=node.get("minItems"), max_length=node.get("maxItems"))
        element = Any if items is None else items.type
        return SchemaNode(kind="array", type=_with(list[element], length),  # type: ignore[valid-type]
                          shape=_with(list[Any], length), items=items)
    if kind == "any":
        return SchemaNode(kind="any", type=Any)
    return SchemaNode(kind=kind, type=_compile_scalar(node, kind))


def compile_schema(schema: dict[str, Any]) -> SchemaNode:
    """Compile a schema that :func:`check_schema` accepted (anything else is a caller bug)."""
    return _compile(schema)


# --------------------------------------------------------------------------- violations


def _at(message: str, path: str) -> str:
    return message if path == "$" else f"{message} - at `{path}`"


def _error_at(error: msgspec.ValidationError, path: str) -> str:
    """msgspec's message for a subtree, its own ``$…`` path re-rooted at ``path``."""
    message = str(error)
    base, marker, inner = message.rpartition(" - at `$")
    if not marker:
        return _at(message, path)
    return _at(base, path + inner.removesuffix("`"))


def _convert_error(value: Any, kind: Any, path: str) -> str | None:
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError as error:
        return _error_at(error, path)
    return None


def _walk(node: SchemaNode, value: Any, path: str, out: list[str]) -> None:
    if node.kind == "object":
        problem = _convert_error(value, node.shape, path)
        if problem is not None:
            out.append(problem)
            return
        declared = {key for key, _ in node.properties}
        out.extend(_at(f"Object missing required field `{key}`", path)
                   for key in node.required if key not in value)
        if node.closed:
            out.extend(_at(f"Object contains unknown field `{key}`", path)
                       for key in value if key not in declared)
        for key, child in node.properties:
            if key in value:
                _walk(child, value[key], f"{path}.{key}", out)
        return
    if node.kind == "array":
        problem = _convert_error(value, node.shape, path)
        if problem is not None:
            out.append(problem)
        if isinstance(value, list) and node.items is not None:
            for index, item in enumerate(value):
                _walk(node.items, item, f"{path}[{index}]", out)
        return
    problem = _convert_error(value, node.type, path)
    if problem is not None:
        out.append(problem)


def value_violations(node: SchemaNode, value: Any) -> list[str]:
    """Every violation of a decoded JSON ``value`` against a compiled node, in walk order.

    >>> node = compile_schema({"type": "object", "required": ["a", "b"], "properties": {
    ...     "a": {"type": "string"}, "b": {"type": "integer", "minimum": 0}}})
    >>> value_violations(node, {"a": 1})
    ['Object missing required field `b`', 'Expected `str`, got `int` - at `$.a`']
    """
    out: list[str] = []
    _walk(node, value, "$", out)
    return out

