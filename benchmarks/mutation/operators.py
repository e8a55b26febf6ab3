"""The mutation operators: every small change a test of the module should notice.

A *site* is one node of the module's syntax tree and one way to change it. Sites are numbered
by a pre-order walk of the tree, so a mutant is (its site's number, the module's source): the
same source gives the same mutants, and a mutant is applied by parsing the source again and
changing the node at that number. Line numbers are kept, so a mutant's tracebacks and its
coverage point at the original lines.

Operators (the issue's measurement used the same families):

* comparisons: ``==``/``!=`` swapped, ``<``/``<=`` and ``>``/``>=`` moved across the boundary,
  ``is``/``is not`` and ``in``/``not in`` swapped;
* ``and``/``or`` swapped; ``not x`` becomes ``x``; the condition of an ``if``, ``while`` or
  conditional expression negated (unless it is a ``not``, which the previous one covers);
* integers ±1 (a default value too) and ``True``/``False`` swapped; the bounds of a slice ±1;
* ``+``/``-`` swapped (not on strings), ``+=``/``-=`` swapped;
* ``raise`` dropped; a ``return`` inside an ``if``/loop body dropped; a ``return x`` returning
  ``None``; ``break``/``continue`` swapped;
* one entry dropped from a tuple, list, set or dict literal of two or more entries.

Never mutated: docstrings and other strings (messages are not behaviour), annotations and
type expressions (``Sequence[T]``, a ``TypeAlias``), decorators, the keywords of a class
statement (a struct's ``frozen=True``, ``tag=...``: declarations), ``assert`` statements (the
core's own invariants), ``__all__`` and ``__slots__``.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Mutant", "mutants", "mutated_tree"]

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
    ast.GtE: ast.Gt, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_SKIPPED_NAMES = frozenset({"__all__", "__slots__"})


@dataclass(frozen=True)
class Mutant:
    """One change to a module: where it is and what it does, in words and in source text."""

    #: Its site's number in the module's pre-order walk (with ``variant``: its identity).
    site: int
    variant: int
    line: int
    #: The function or class it sits in, dotted (``<module>`` at the top).
    scope: str
    operator: str
    before: str
    after: str
    #: The line of the statement it sits in, and whether that is in a function body (a
    #: change elsewhere takes effect at import, for every test).
    statement: int = 0
    in_function: bool = False

    @property
    def key(self) -> str:
        """How the mutant is named in the list of equivalent ones: stable while the code
        around it changes (no line number)."""
        return f"{self.scope}: `{self.before}` -> `{self.after}`"


@dataclass(frozen=True)
class _Place:
    scope: tuple[str, ...]
    allowed: bool
    #: The line of the innermost statement holding the node (what the clean run records).
    statement: int
    #: Whether that statement is in a function body (else it runs at import).
    in_function: bool


def _numbered(tree: ast.AST) -> Iterator[tuple[int, ast.AST, _Place]]:
    """(number, node, where it is) in pre-order."""
    counter = 0
    stack: list[tuple[ast.AST, _Place]] = [(tree, _Place((), True, 0, False))]
    while stack:
        node, place = stack.pop()
        if isinstance(node, ast.stmt):
            place = _Place(place.scope, place.allowed, node.lineno, place.in_function)
        yield counter, node, place
        counter += 1
        children: list[tuple[ast.AST, _Place]] = []
        function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        scope = (*place.scope, node.name) if function or isinstance(node, ast.ClassDef) \
            else place.scope
        for field, value in ast.iter_fields(node):
            nodes = value if isinstance(value, list) else [value]
            inside = place.in_function or (function and field == "body")
            for child in nodes:
                if not isinstance(child, ast.AST):
                    continue
                children.append((child, _Place(
                    scope, place.allowed and _may_mutate(node, field, child), place.statement,
                    inside)))
        stack.extend(reversed(children))


def _is_type_expression(node: ast.Subscript) -> bool:
    """``Sequence[T]``, ``tuple[str, ...]``, ``Callable[[A], B]``: a type, not an index."""
    value = node.value
    name = value.id if isinstance(value, ast.Name) else (
        value.attr if isinstance(value, ast.Attribute) else "")
    return name[:1].isupper() or name in _GENERIC_BUILTINS


_GENERIC_BUILTINS = frozenset({"tuple", "list", "dict", "set", "frozenset", "type"})


def _may_mutate(parent: ast.AST, field: str, child: ast.AST) -> bool:
    if field in ("annotation", "returns", "decorator_list", "type_comment"):
        return False
    if isinstance(parent, ast.ClassDef) and field == "keywords":
        return False  # a struct's configuration (frozen, tag, rename): declarations
    if isinstance(parent, ast.Assert):
        return False
    if isinstance(parent, ast.Subscript) and field == "slice" and _is_type_expression(parent):
        return False
    if (isinstance(parent, ast.AnnAssign) and isinstance(parent.annotation, ast.Name)
            and parent.annotation.id == "TypeAlias"):
        return False
    if isinstance(parent, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        if any(isinstance(t, ast.Name) and t.id in _SKIPPED_NAMES for t in targets):
            return False
    is_docstring = (isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant)
                    and isinstance(child.value.value, str))
    return not is_docstring


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant)
                                               and isinstance(node.value, str | bytes))


def _changes(node: ast.AST, parent_loop_or_if: bool) -> list[tuple[str, ast.AST]]:
    """The ways to change ``node``: (operator name, the node that replaces it)."""
    out: list[tuple[str, ast.AST]] = []
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            swap = _COMPARE_SWAPS.get(type(op))
            if swap is not None:
                changed = copy.copy(node)
                changed.ops = [*node.ops]
                changed.ops[index] = swap()
                out.append(("comparison", changed))
    elif isinstance(node, ast.BoolOp):
        changed = copy.copy(node)
        changed.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        out.append(("and/or", changed))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("drop not", node.operand))
    elif isinstance(node, ast.If | ast.While | ast.IfExp):
        if not (isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)):
            changed = copy.copy(node)
            changed.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
            out.append(("negate condition", changed))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append(("true/false", ast.Constant(value=not node.value)))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        out.append(("integer +1", ast.Constant(value=node.value + 1)))
        out.append(("integer -1", ast.Constant(value=node.value - 1)))
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        if not (_is_text(node.left) or _is_text(node.right)):
            changed = copy.copy(node)
            changed.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
            out.append(("+/-", changed))
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add | ast.Sub):
        changed = copy.copy(node)
        changed.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        out.append(("+=/-=", changed))
    elif isinstance(node, ast.Slice):
        for bound in ("lower", "upper"):
            value = getattr(node, bound)
            if value is None or isinstance(value, ast.Constant):
                continue  # constants get ±1 above
            for name, op in (("+1", ast.Add()), ("-1", ast.Sub())):
                changed = copy.copy(node)
                setattr(changed, bound, ast.BinOp(left=value, op=op,
                                                  right=ast.Constant(value=1)))
                out.append((f"slice bound {name}", changed))
    elif isinstance(node, ast.Raise):
        out.append(("drop raise", ast.Pass()))
    elif isinstance(node, ast.Return):
        if parent_loop_or_if:
            out.append(("drop return", ast.Pass()))
        if node.value is not None and not (isinstance(node.value, ast.Constant)
                                           and node.value.value is None):
            out.append(("return None", ast.Return(value=ast.Constant(value=None))))
    elif isinstance(node, ast.Break):
        out.append(("break/continue", ast.Continue()))
    elif isinstance(node, ast.Continue):
        out.append(("break/continue", ast.Break()))
    elif isinstance(node, ast.Tuple | ast.List | ast.Set) and not isinstance(
            getattr(node, "ctx", None), ast.Store):
        if len(node.elts) >= 2 and not any(isinstance(e, ast.Starred) for e in node.elts):
            for index in range(len(node.elts)):
                changed = copy.copy(node)
                changed.elts = [e for i, e in enumerate(node.elts) if i != index]
                out.append(("drop entry", changed))
    elif isinstance(node, ast.Dict) and len(node.keys) >= 2:
        for index in range(len(node.keys)):
            changed = copy.copy(node)
            changed.keys = [k for i, k in enumerate(node.keys) if i != index]
            changed.values = [v for i, v in enumerate(node.values) if i != index]
            out.append(("drop entry", changed))
    return out


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _sites(tree: ast.AST) -> Iterator[tuple[int, ast.AST, _Place, list[tuple[str, ast.AST]]]]:
    parents = _parents(tree)
    for number, node, place in _numbered(tree):
        if not place.allowed:
            continue
        parent = parents.get(id(node))
        in_branch = isinstance(parent, ast.If | ast.For | ast.While | ast.With | ast.Try)
        changes = _changes(node, in_branch)
        if changes:
            yield number, node, place, changes


class _Segments:
    """Source text by node position (``ast.get_source_segment`` splits the source on every
    call: quadratic over a module's mutants)."""

    def __init__(self, source: str) -> None:
        self.lines = source.encode().splitlines(keepends=True)

    def __call__(self, node: ast.AST) -> str | None:
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if first is None or last is None or start is None or end is None:
            return None
        if first == last:
            return self.lines[first - 1][start:end].decode()
        parts = [self.lines[first - 1][start:], *self.lines[first:last - 1],
                 self.lines[last - 1][:end]]
        return b"".join(parts).decode()


def mutants(source: str) -> list[Mutant]:
    """Every mutant of ``source``, in site order."""
    segment = _Segments(source)
    tree = ast.parse(source)
    found: list[Mutant] = []
    seen: dict[str, int] = {}
    for number, node, place, changes in _sites(tree):
        for variant, (operator, changed) in enumerate(changes):
            before, after = _shown(segment, node, changed, operator)
            mutant = Mutant(site=number, variant=variant, line=getattr(node, "lineno", 0),
                            scope=".".join(place.scope) or "<module>", operator=operator,
                            before=before, after=after, statement=place.statement,
                            in_function=place.in_function)
            seen[mutant.key] = seen.get(mutant.key, 0) + 1
            if seen[mutant.key] > 1:  # the same change twice in one scope: number the rest
                mutant = Mutant(**{**mutant.__dict__, "after": f"{after} #{seen[mutant.key]}"})
            found.append(mutant)
    return found


def _shown(segment: _Segments, node: ast.AST, changed: ast.AST, operator: str,
           ) -> tuple[str, str]:
    """The change in source text, only as much of it as changes: a negated condition shows
    the condition, a dropped entry the entry."""
    def text(part: ast.AST) -> str:
        return _one_line(segment(part) or ast.unparse(part))

    if operator == "negate condition":
        assert isinstance(node, ast.If | ast.While | ast.IfExp)
        return text(node.test), f"not ({text(node.test)})"
    if operator == "drop entry":
        if isinstance(node, ast.Dict):
            assert isinstance(changed, ast.Dict)
            entries = [f"{text(k)}: {text(v)}" if k is not None else f"**{text(v)}"
                       for k, v in zip(node.keys, node.values, strict=True)]
            left = [ast.dump(v) for v in changed.values]
            olds = [ast.dump(v) for v in node.values]
        else:
            assert isinstance(node, ast.Tuple | ast.List | ast.Set)
            assert isinstance(changed, ast.Tuple | ast.List | ast.Set)
            entries = [text(e) for e in node.elts]
            left = [ast.dump(e) for e in changed.elts]
            olds = [ast.dump(e) for e in node.elts]
        dropped = next((i for i, old in enumerate(olds) if i >= len(left) or old != left[i]),
                       len(olds) - 1)
        return entries[dropped], "(entry dropped)"
    return text(node), _one_line(ast.unparse(changed))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def mutated_tree(source: str, mutant: Mutant) -> ast.Module:
    """The module's tree with ``mutant`` applied, line numbers kept (ready for ``compile``)."""
    tree = ast.parse(source)
    for number, node, _, changes in _sites(tree):
        if number != mutant.site:
            continue
        _, changed = changes[mutant.variant]
        ast.copy_location(changed, node)
        replaced = _replace(tree, node, changed)
        assert replaced, mutant
        ast.fix_missing_locations(tree)
        return tree
    raise LookupError(f"no site {mutant.site} in the source (did it change?)")


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return True
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if item is old:
                        value[index] = new
                        return True
    return False
