"""The JSON Schema subset that tool parameters and structured output are checked against.

One checker and one validator, with DSH's rules and words (``dsh-tools`` ``json-schema.ts``):
a tool's parameters are checked when the tool is defined and its arguments validated on every
call; a child's requested output schema is checked before the child exists and its
``structured_output`` arguments validated on every call.

Rules of this module:

* **The subset.** Constraints: ``type`` (one of object/array/string/number/integer/boolean/
  null; a single string), ``oneOf`` (at least two branches, exactly one must match),
  ``properties``, ``required`` (names declared in ``properties``), ``additionalProperties``
  (a boolean), ``items``, ``enum`` and ``const`` (scalars of the node's type; ``const`` one of
  ``enum`` when both are given). Annotations, never enforced: ``description`` and ``title``
  (strings), ``default`` and ``examples`` (any lossless JSON). A node with neither ``type`` nor
  ``oneOf`` accepts any lossless JSON value and may carry only annotations. Every other keyword,
  and every keyword on a type it does not apply to, is refused: a keyword accepted but not
  enforced would silently weaken the contract.
* **Any root** is accepted by :func:`check_schema`; :func:`check_object_schema` adds the
  object-root rule of structured output.
* **Every violation at once**, in walk order (a node's own keywords, then its children in
  order, then the checks that need them), each with its path: ``schema``, ``.properties.<key>``,
  ``.items``, ``.oneOf[<i>]``.
* **Values** are checked against a schema that passed the check, and every violation is listed
  with its path: the root is named by ``path`` (``value`` for structured output, ``""`` for tool
  arguments, shown as ``arguments`` where the root itself is meant), then ``.<key>`` and
  ``[<i>]``. Objects report their missing required properties, then their properties' own
  violations (in the schema's order), then undeclared properties when closed; a ``oneOf``
  reports only how many branches matched.
* **Lossless JSON.** A value is JSON when it is ``None``, a bool, a string, a finite float other
  than ``-0.0``, an integer within ±(2^53−1) (the rest of the core's rule; DSH reads bigger ones
  rounded), a list or tuple of JSON, or a dict of string keys to JSON, without cycles.
  Annotation values and every value checked must be lossless JSON.
* **Stack-safe.** Schemas and values are walked with explicit stacks, never recursion: any
  depth is checked.
* **Key order** is JavaScript's (``Object.keys``): keys that are array indices (``"0"``,
  ``"17"``) first, ascending, then the others as written, so violations come in DSH's order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, ClassVar

import msgspec
from returns.result import Failure, Result, Success

from .._checking import checked
from .._json import MAX_SAFE_INTEGER, json_string_literal

__all__ = [
    "SCHEMA_TYPES",
    "CONSTRAINT_KEYWORDS",
    "ANNOTATION_KEYWORDS",
    "JsonSchemaError",
    "SupportedSchema",
    "check_schema",
    "check_object_schema",
    "value_violations",
]

#: The values ``type`` may take.
SCHEMA_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
#: The keywords that constrain a value.
CONSTRAINT_KEYWORDS = frozenset({"type", "oneOf", "properties", "required",
                                 "additionalProperties", "items", "enum", "const"})
#: The keywords that only describe (never enforced; their values must be lossless JSON).
ANNOTATION_KEYWORDS = frozenset({"description", "title", "default", "examples"})

_SCALAR_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})
#: Keywords that need a ``type``, in the order their misuse is reported.
_TYPED_KEYWORDS = ("properties", "required", "additionalProperties", "items", "enum", "const")
#: The types each typed keyword may sit on.
_ALLOWED_ON = {"properties": frozenset({"object"}), "required": frozenset({"object"}),
               "additionalProperties": frozenset({"object"}), "items": frozenset({"array"}),
               "enum": _SCALAR_TYPES, "const": _SCALAR_TYPES}
_SUBSET = "type/oneOf/properties/required/additionalProperties/items/enum/const + annotations"
_OBJECT_ROOTED = 'schema.type must be "object" (structured output is object-rooted)'


class JsonSchemaError(msgspec.Struct, frozen=True):
    """A schema outside the subset: every violation, in walk order (DSH's ``JsonSchemaError``)."""

    violations: tuple[str, ...]
    name: ClassVar[str] = "JsonSchemaError"
    code: ClassVar[str] = "UNSUPPORTED_SCHEMA"

    @property
    def message(self) -> str:
        """``unsupported JSON schema: <violation>; <violation>…``"""
        return "unsupported JSON schema: " + "; ".join(self.violations)


class SupportedSchema(msgspec.Struct, frozen=True, eq=False):
    """A schema that passed :func:`check_schema`: the only kind :func:`value_violations` takes.

    ``schema`` is the checked value itself, not a copy: it must not change afterwards.
    """

    schema: Any


# --------------------------------------------------------------------------- JSON values


#: The largest array index JavaScript orders first, 2^32 - 2, as its decimal digits.
_MAX_INDEX_KEY = str(2**32 - 2)


def _is_index_key(key: str) -> bool:
    """Whether JavaScript orders ``key`` as an array index (``Object.keys``).

    Classified by its digits, never converted: a key is untrusted text of any length.
    """
    if not (key.isascii() and key.isdigit()) or (key[0] == "0" and key != "0"):
        return False
    # Canonical digit strings of one length compare as their numbers do.
    return len(key) < len(_MAX_INDEX_KEY) or (len(key) == len(_MAX_INDEX_KEY)
                                              and key <= _MAX_INDEX_KEY)


def _js_keys(record: dict[Any, Any]) -> list[Any]:
    """``record``'s keys in JavaScript's order: array indices ascending, then the rest."""
    keys = list(record)
    if not any(isinstance(key, str) and key[:1].isdigit() for key in keys):
        return keys
    indices = sorted((key for key in keys if isinstance(key, str) and _is_index_key(key)),
                     key=int)
    chosen = set(indices)
    return [*indices, *(key for key in keys if key not in chosen)]


def _is_json_number(value: object) -> bool:
    """A number DSH's JavaScript holds exactly: finite, not ``-0``, integers in the safe range."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if isinstance(value, float):
        return math.isfinite(value) and not (value == 0 and math.copysign(1.0, value) < 0)
    return False


def _is_json_value(value: object) -> bool:
    """Whether ``value`` is lossless JSON (module rules); shared parts are fine, cycles are not."""
    ancestors: set[int] = set()
    stack: list[tuple[object, bool]] = [(value, False)]
    while stack:
        item, leaving = stack.pop()
        if leaving:
            ancestors.discard(id(item))
            continue
        if item is None or isinstance(item, bool | str):
            continue
        if isinstance(item, int | float):
            if not _is_json_number(item):
                return False
            continue
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return False
            children: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            return False
        if id(item) in ancestors:
            return False
        ancestors.add(id(item))
        stack.append((item, True))
        stack.extend((child, False) for child in children)
    return True


def _js_number(value: int | float) -> str:
    """A number as JavaScript's ``String(number)`` writes it (``1.0`` is ``1``, ``1e-7``)."""
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e21):
        return str(int(value))
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)  # a finite float
    point = exponent + len(digit_tuple)  # the decimal point sits after this many digits
    if len(digits) <= point <= 21:
        text = digits + "0" * (point - len(digits))
    elif 0 < point <= 21:
        text = f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        text = f"0.{'0' * -point}{digits}"
    else:
        mantissa = digits if len(digits) == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{mantissa}e{'+' if point > 0 else '-'}{abs(point - 1)}"
    return ("-" if sign else "") + text


def _js_json(value: object) -> str:
    """A scalar, or a list of scalars, as ``JSON.stringify`` writes it."""
    if isinstance(value, list | tuple):
        return "[" + ",".join(_js_json(item) for item in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json_string_literal(value).decode()
    assert isinstance(value, int | float)
    return _js_number(value)


def _matches_scalar(kind: str, value: object) -> bool:
    """Whether ``value`` is a value of the scalar type ``kind``."""
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return _is_json_number(value)
    if kind == "integer":
        return _is_json_number(value) and (isinstance(value, int)
                                           or (isinstance(value, float) and value.is_integer()))
    if kind == "boolean":
        return isinstance(value, bool)
    return value is None


# --------------------------------------------------------------------------- schemas


def _is_record(node: object) -> bool:
    return isinstance(node, dict) and all(isinstance(key, str) for key in node)


def _is_array(node: object) -> bool:
    return isinstance(node, list | tuple)


_ENTER, _LEAVE, _ONE_OF_TAIL, _OBJECT_TAIL = range(4)


def _check_annotations(node: dict[str, Any], path: str, out: list[str]) -> None:
    for key in _js_keys(node):
        if key in CONSTRAINT_KEYWORDS:
            continue
        if key in ANNOTATION_KEYWORDS:
            if not _is_json_value(node[key]):
                out.append(f"{path}.{key} annotation must be lossless JSON data")
        else:
            out.append(f"{path}.{key} is not a supported keyword (subset: {_SUBSET})")
    for key in ("description", "title"):
        if key in node and not isinstance(node[key], str):
            out.append(f"{path}.{key} must be a string")


def _check_scalar(node: dict[str, Any], path: str, kind: str, out: list[str]) -> None:
    allowed: Any = node.get("enum")
    enum_valid = _is_array(allowed) and len(allowed) > 0 \
        and all(_matches_scalar(kind, value) for value in allowed)
    if "enum" in node and not enum_valid:
        out.append(f"{path}.enum must be a non-empty array of {kind} values")
    if "const" in node:
        if not _matches_scalar(kind, node["const"]):
            out.append(f"{path}.const must be a {kind} value")
        elif enum_valid and node["const"] not in allowed:
            out.append(f"{path}.const must be one of {path}.enum when both are declared")


def _check_object_tail(node: dict[str, Any], path: str, properties: object,
                       out: list[str]) -> None:
    if "required" in node:
        required = node["required"]
        if not _is_array(required) or not all(isinstance(key, str) for key in required):
            out.append(f"{path}.required must be an array of strings")
        else:
            declared = properties if _is_record(properties) else {}
            assert isinstance(declared, dict)
            out.extend(f'{path}.required names "{key}" which is not in properties'
                       for key in required if key not in declared)
    if "additionalProperties" in node and not isinstance(node["additionalProperties"], bool):
        out.append(f"{path}.additionalProperties must be a boolean")


def _walk_schema(root: object, out: list[str]) -> None:
    """Append every subset violation of ``root`` to ``out``, in walk order."""
    ancestors: set[int] = set()
    tasks: list[tuple[Any, ...]] = [(_ENTER, root, "schema")]
    while tasks:
        task = tasks.pop()
        if task[0] == _LEAVE:
            ancestors.discard(task[1])
            continue
        if task[0] == _ONE_OF_TAIL:
            node, path = task[1], task[2]
            out.extend(f"{path}.{key} is not supported beside oneOf"
                       for key in _TYPED_KEYWORDS if key in node)
            continue
        if task[0] == _OBJECT_TAIL:
            _check_object_tail(task[1], task[2], task[3], out)
            continue
        node, path = task[1], task[2]
        if not _is_record(node):
            out.append(f"{path} must be a schema object")
            continue
        if id(node) in ancestors:
            out.append(f"{path} is circular")
            continue
        ancestors.add(id(node))
        tasks.append((_LEAVE, id(node)))
        _check_annotations(node, path, out)
        if "type" in node and "oneOf" in node:
            out.append(f"{path} cannot declare both type and oneOf")
            continue
        if "oneOf" in node:
            branches = node["oneOf"]
            tasks.append((_ONE_OF_TAIL, node, path))
            if not _is_array(branches) or len(branches) < 2:
                out.append(f"{path}.oneOf must be an array of at least two schemas")
            else:
                tasks.extend((_ENTER, branches[index], f"{path}.oneOf[{index}]")
                             for index in reversed(range(len(branches))))
            continue
        if "type" not in node:
            out.extend(f"{path}.{key} requires type or oneOf"
                       for key in _TYPED_KEYWORDS if key in node)
            continue
        kind = node["type"]
        if not isinstance(kind, str) or kind not in SCHEMA_TYPES:
            out.append(f"{path}.type must be a single type string (type arrays are not supported)"
                       if isinstance(kind, list | tuple)
                       else f"{path}.type must be one of {'/'.join(SCHEMA_TYPES)}")
            continue
        out.extend(f'{path}.{key} is not supported on type "{kind}"'
                   for key in _TYPED_KEYWORDS if key in node and kind not in _ALLOWED_ON[key])
        if kind == "object":
            properties = node.get("properties")
            tasks.append((_OBJECT_TAIL, node, path, properties))
            if "properties" in node:
                if not _is_record(properties):
                    out.append(f"{path}.properties must be an object of schemas")
                else:
                    tasks.extend((_ENTER, properties[key], f"{path}.properties.{key}")
                                 for key in reversed(_js_keys(properties)))
        elif kind == "array":
            if "items" in node:
                tasks.append((_ENTER, node["items"], f"{path}.items"))
        else:
            _check_scalar(node, path, kind, out)


@checked
def check_schema(schema: object) -> Result[SupportedSchema, JsonSchemaError]:
    """``schema`` (decoded JSON) as a :class:`SupportedSchema`, or every way it leaves the subset.

    Any root is accepted (DSH's ``assertSupportedJsonSchema``).

    >>> check_schema({"type": "string", "enum": ["a", "b"]}).unwrap().schema["enum"]
    ['a', 'b']
    >>> check_schema({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    ...              ).failure().violations[0]  # doctest: +ELLIPSIS
    'schema.properties.n.minimum is not a supported keyword (subset: type/oneOf/...)'
    """
    out: list[str] = []
    _walk_schema(schema, out)
    return Failure(JsonSchemaError(tuple(out))) if out else Success(SupportedSchema(schema))


@checked
def check_object_schema(schema: object) -> Result[SupportedSchema, JsonSchemaError]:
    """:func:`check_schema`, then the root must be ``type: "object"`` (structured output's rule,
    DSH's ``assertObjectJsonSchema``).

    >>> check_object_schema({"type": "array"}).failure().message
    'unsupported JSON schema: schema.type must be "object" (structured output is object-rooted)'
    """
    out: list[str] = []
    _walk_schema(schema, out)
    if not out and not (isinstance(schema, dict) and schema.get("type") == "object"):
        out.append(_OBJECT_ROOTED)
    return Failure(JsonSchemaError(tuple(out))) if out else Success(SupportedSchema(schema))


# --------------------------------------------------------------------------- values


def _shown(path: str) -> str:
    """The root's name where the root itself is meant (tool arguments have an empty root)."""
    return path or "arguments"


def _member(path: str, key: object) -> str:
    return f"{path}.{key}" if path else f"{key}"


class _Frame:
    """One schema node being checked against one value: a call frame, kept on a list."""

    __slots__ = (
        "children",
        "kind",
        "matches",
        "next",
        "node",
        "path",
        "tail",
        "value",
        "violations",
    )

    def __init__(self, node: dict[str, Any], value: object, path: str) -> None:
        self.node = node
        self.value = value
        self.path = path
        self.kind = ""
        self.children: list[tuple[dict[str, Any], object, str]] | None = None
        self.next = 0
        self.violations: list[str] = []
        self.tail: list[str] = []
        self.matches = 0


def _scalar_violations(node: dict[str, Any], value: object, path: str) -> list[str]:
    if "enum" in node and value not in node["enum"]:
        return [f'"{_shown(path)}" must be one of {_js_json(node["enum"])}']
    if "const" in node and value != node["const"]:
        return [f'"{_shown(path)}" must be {_js_json(node["const"])}']
    return []


def _type_violations(kind: str, value: object, path: str) -> list[str] | None:
    """A scalar's type violation (``[]`` if it has the type), or ``None`` for a container."""
    if kind == "string":
        return [] if isinstance(value, str) else [f'"{_shown(path)}" must be a string']
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return [f'"{_shown(path)}" must be a number']
        return [] if _is_json_number(value) else [f'"{_shown(path)}" must be a finite JSON number']
    if kind == "integer":
        return [] if _matches_scalar("integer", value) \
            else [f'"{_shown(path)}" must be an integer']
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f'"{_shown(path)}" must be a boolean']
    if kind == "null":
        return [] if value is None else [f'"{_shown(path)}" must be null']
    return None


def _start(frame: _Frame) -> list[str] | None:
    """Begin a frame: its violations if it needs no children, else ``None`` (children set)."""
    node, value, path = frame.node, frame.value, frame.path
    if "oneOf" in node:
        frame.kind = "oneOf"
        frame.children = [(branch, value, path) for branch in node["oneOf"]]
        return None
    if "type" not in node:
        return [] if _is_json_value(value) else [f'"{_shown(path)}" must be a lossless JSON value']
    kind = node["type"]
    if kind == "object":
        if not isinstance(value, dict):
            return [f'"{_shown(path)}" must be an object']
        properties: dict[str, Any] = node.get("properties", {})
        frame.violations = [f'missing required property "{_member(path, key)}"'
                            for key in node.get("required", ()) if key not in value]
        frame.children = [(properties[key], value[key], _member(path, key))
                          for key in _js_keys(properties) if key in value]
        if node.get("additionalProperties") is False:
            frame.tail = [f'"{_member(path, key)}" is not a declared property '
                          f"(additionalProperties: false)"
                          for key in _js_keys(value) if key not in properties]
        frame.kind = "object"
        return None
    if kind == "array":
        if not isinstance(value, list | tuple):
            return [f'"{_shown(path)}" must be an array']
        items = node.get("items")
        frame.children = [] if items is None else \
            [(items, item, f"{path}[{index}]") for index, item in enumerate(value)]
        frame.kind = "array"
        return None
    problem = _type_violations(kind, value, path)
    assert problem is not None  # a checked schema has no other type
    return problem or _scalar_violations(node, value, path)


def _finish(frame: _Frame) -> list[str]:
    """End a frame whose children are all checked."""
    if frame.kind == "oneOf":
        return [] if frame.matches == 1 else [
            f'"{_shown(frame.path)}" must match exactly one oneOf branch '
            f"(matched {frame.matches})"]
    violations = frame.violations + frame.tail
    if violations:
        return violations
    # Children without violations are lossless JSON; what no child checked is checked here.
    value: Any = frame.value
    if frame.kind == "object":
        properties = frame.node.get("properties", {})
        rest_ok = all(isinstance(key, str) and (key in properties or _is_json_value(item))
                      for key, item in value.items())
        return [] if rest_ok else [f'"{_shown(frame.path)}" must be a lossless JSON object']
    if "items" in frame.node or _is_json_value(value):
        return []
    return [f'"{_shown(frame.path)}" must be a dense lossless JSON array']


@checked
def value_violations(schema: SupportedSchema, value: object, path: str = "value") -> list[str]:
    """Every violation of ``value`` against ``schema``, in walk order; empty means valid.

    ``path`` names the root (``""`` for tool arguments, as DSH's tools do).

    >>> schema = check_schema({"type": "object", "required": ["a"], "properties": {
    ...     "a": {"type": "string"}, "b": {"type": "integer"}}}).unwrap()
    >>> value_violations(schema, {"b": "x"})
    ['missing required property "value.a"', '"value.b" must be an integer']
    >>> value_violations(schema, {"a": 1}, "")
    ['"a" must be a string']
    """
    frames = [_Frame(schema.schema, value, path)]
    while True:
        frame = frames[-1]
        if frame.children is None:
            outcome = _start(frame)
            if outcome is None:
                continue
        elif frame.next < len(frame.children):
            node, child_value, child_path = frame.children[frame.next]
            frame.next += 1
            frames.append(_Frame(node, child_value, child_path))
            continue
        else:
            outcome = _finish(frame)
        frames.pop()
        if not frames:
            return outcome
        parent = frames[-1]
        if parent.kind == "oneOf":
            parent.matches += not outcome
        else:
            parent.violations.extend(outcome)
