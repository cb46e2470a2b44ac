"""The typed tree of a compiled SQL filter: one node type per modelled construct.

:func:`lancenb.expr.filters.compile_filter` builds these nodes from a SQL predicate
(:mod:`lancenb.expr.parse`); each node gives its ``pyarrow.compute`` form
(:meth:`Node.expr`) and :mod:`lancenb.expr.pruning` reads the tree to decide,
from per-column statistics, whether a predicate may be true. Example: ``a > 5 AND
s IS NULL`` is ``And(Cmp(">", Col(("a",), int64), Lit(5)), IsNull(Col(("s",),
string), negated=False))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InvalidInputError
from lancenb.expr import floatorder

__all__ = ["Node", "Col", "Lit", "Opaque", "Cast", "Cmp", "Arith", "Neg", "And", "Or", "Not",
           "IsNull", "IsBool", "In", "Like", "CMP", "FLIP", "NEGATE", "ARITH", "is_numeric",
           "is_text"]


class Node:
    """A node of the tree: its Arrow result ``type`` and its ``pyarrow.compute`` form."""
    type: pa.DataType

    def expr(self) -> pc.Expression:
        """This node as a ``pyarrow.compute`` expression."""
        raise NotImplementedError


@dataclass(frozen=True)
class Col(Node):
    """A column, or a struct field by its path (``a.b.c`` is ``("a", "b", "c")``)."""
    path: tuple[str, ...]
    type: pa.DataType

    def expr(self):
        """``pc.field(*path)``."""
        return pc.field(*self.path)


@dataclass(frozen=True)
class Lit(Node):
    """A literal value, typed (cast to what it is compared with when exact)."""
    value: pa.Scalar

    @property
    def type(self):
        """The literal's Arrow type."""
        return self.value.type

    def expr(self):
        """The literal as a scalar expression."""
        return pc.scalar(self.value)


@dataclass(frozen=True)
class Opaque(Node):
    """A part of a filter the typed tree does not model (a function, ``CASE``, ...):
    the engine evaluates it, statistics pruning assumes it may be true."""

    sql: str
    type = pa.bool_()

    def expr(self):
        """Refused: only the SQL engine evaluates this part."""
        raise InvalidInputError(f"{self.sql!r} has no pyarrow.compute translation")


@dataclass(frozen=True)
class Cast(Node):
    """``CAST(arg AS type)``."""
    arg: Node
    type: pa.DataType

    def expr(self):
        """The argument cast to ``type``."""
        return self.arg.expr().cast(self.type)


CMP = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
        ">": pc.greater, ">=": pc.greater_equal}
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True)
class Cmp(Node):
    """A comparison ``left op right`` (``op`` one of ``= != < <= > >=``)."""
    op: str
    left: Node
    right: Node
    type = pa.bool_()

    def expr(self):
        """The comparison; floats in pylance's total order
        (:mod:`lancenb.expr.floatorder`)."""
        fa, fb = pa.types.is_floating(self.left.type), pa.types.is_floating(self.right.type)
        if not (fa or fb):
            return CMP[self.op](self.left.expr(), self.right.expr())
        # both sides as the wider float type, then compared by their order keys; a
        # comparison with a literal holds -0.0 and +0.0 equal (as pylance does)
        typ = max((t for t in (self.left.type, self.right.type) if pa.types.is_floating(t)),
                  key=lambda t: t.bit_width)
        if pa.types.is_float16(typ):
            typ = pa.float32()  # pylance compares float16 widened (sNaN quieted), sorts it raw
        zeq = isinstance(self.left, Lit) or isinstance(self.right, Lit)
        return CMP[self.op](_order_key(self.left, typ, zeq), _order_key(self.right, typ, zeq))


def _order_key(node: Node, typ: pa.DataType, zeros_equal: bool) -> pc.Expression:
    """The order key expression of ``node`` as the float type ``typ``."""
    narrower = pa.types.is_floating(node.type) and node.type.bit_width < typ.bit_width
    if isinstance(node, Lit):
        if narrower:  # (widened bit for bit, as pylance widens)
            return pc.scalar(floatorder.key_scalar(node.value, zeros_equal, typ.bit_width))
        value = node.value if node.value.type == typ else node.value.cast(typ)
        return pc.scalar(floatorder.key_scalar(value, zeros_equal))
    e = node.expr()
    if isinstance(node, Col) and narrower:
        return floatorder.order_key(e, node.type, zeros_equal, typ)
    # (a column is typed exactly; other nodes are cast even when their type is typ:
    # Arrow may type arithmetic on a literal more narrowly, float32 * 1.5 as float32)
    return floatorder.order_key(e if isinstance(node, Col) and node.type == typ
                                else e.cast(typ), typ, zeros_equal)


def _is_float(*values) -> bool:
    return any(pa.types.is_floating(v.type) for v in values)


def _divide(a, b):
    """``/``: integers truncate and raise on a zero divisor; floats follow IEEE 754
    (``1.0 / 0`` is inf, ``0.0 / 0`` NaN), as pylance's ``/``."""
    return (pc.divide if _is_float(a, b) else pc.divide_checked)(a, b)


# pyarrow >= 26 has ``remainder`` (C's fmod for floats); older versions have no
# remainder function at all (issue 37), so integers use the identity below everywhere
# and float remainders are left to the SQL engine there
_NATIVE_REMAINDER = getattr(pc, "remainder", None)


def _remainder(a, b, ta: pa.DataType | None = None, tb: pa.DataType | None = None):
    """``%`` as pylance computes it: the sign of the dividend (truncated division);
    integer ``x % 0`` raises, ``INT_MIN % -1`` is 0; floats as C's ``fmod`` (``x % 0.0``
    is NaN). ``a``/``b`` are arrays or scalars, or expressions of types ``ta``/``tb``."""
    ta, tb = ta or a.type, tb or b.type
    if not (pa.types.is_integer(ta) and pa.types.is_integer(tb)):
        if _NATIVE_REMAINDER is None:
            raise pa.ArrowNotImplementedError(
                f"pyarrow {pa.__version__} has no remainder function for {ta} % {tb}")
        return _NATIVE_REMAINDER(a, b)
    if pa.types.is_signed_integer(tb):
        # a - trunc(a / b) * b; a divisor of -1 gives 0, and as 1 it cannot overflow
        lit = pc.scalar if isinstance(b, pc.Expression) else (lambda v: v)
        b = pc.if_else(pc.equal(b, lit(pa.scalar(-1, tb))), lit(pa.scalar(1, tb)), b)
    return pc.subtract(a, pc.multiply(pc.divide_checked(a, b), b))


#: ``op`` -> function of two scalars or arrays (with types), as pylance computes it
ARITH = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked,
         "/": _divide, "%": _remainder}


@dataclass(frozen=True)
class Arith(Node):
    """Checked arithmetic ``left op right`` (``op`` one of ``+ - * / %``)."""
    op: str
    left: Node
    right: Node
    type: pa.DataType

    def expr(self):
        """The pyarrow.compute operation (integer overflow raises)."""
        a, b = self.left.expr(), self.right.expr()
        if self.op == "/":
            floating = pa.types.is_floating(self.left.type) or pa.types.is_floating(
                self.right.type)
            return (pc.divide if floating else pc.divide_checked)(a, b)
        if self.op == "%":
            return _remainder(a, b, self.left.type, self.right.type)
        return ARITH[self.op](a, b)


@dataclass(frozen=True)
class Neg(Node):
    """Unary minus."""
    arg: Node

    @property
    def type(self):
        """The argument's type."""
        return self.arg.type

    def expr(self):
        """Checked negation."""
        return pc.negate_checked(self.arg.expr())


@dataclass(frozen=True)
class And(Node):
    """SQL ``AND`` (three-valued: Kleene logic)."""
    left: Node
    right: Node
    type = pa.bool_()

    def expr(self):
        """``and_kleene`` of both sides."""
        return pc.and_kleene(self.left.expr(), self.right.expr())


@dataclass(frozen=True)
class Or(Node):
    """SQL ``OR`` (three-valued: Kleene logic)."""
    left: Node
    right: Node
    type = pa.bool_()

    def expr(self):
        """``or_kleene`` of both sides."""
        return pc.or_kleene(self.left.expr(), self.right.expr())


@dataclass(frozen=True)
class Not(Node):
    """SQL ``NOT`` (NULL stays NULL)."""
    arg: Node
    type = pa.bool_()

    def expr(self):
        """The inverted argument."""
        return pc.invert(self.arg.expr())


@dataclass(frozen=True)
class IsNull(Node):
    """``x IS NULL``, or ``x IS NOT NULL`` when ``negated``: never null."""
    arg: Node
    negated: bool
    type = pa.bool_()

    def expr(self):
        """``is_null`` or ``is_valid`` of the argument."""
        return (pc.is_valid if self.negated else pc.is_null)(self.arg.expr())


@dataclass(frozen=True)
class IsBool(Node):
    """``x IS TRUE`` / ``x IS FALSE``: never null."""

    arg: Node
    value: bool
    type = pa.bool_()

    def expr(self):
        """The test, NULL read as false."""
        e = self.arg.expr() if self.value else pc.invert(self.arg.expr())
        return pc.coalesce(e, pc.scalar(False))


@dataclass(frozen=True)
class In(Node):
    """``x IN (values)``: NULL when x is null, or when no match and the list has a NULL."""

    arg: Node
    values: pa.Array  # the non-null values, typed like ``arg`` where possible
    has_null: bool
    type = pa.bool_()

    def expr(self):
        """``is_in`` with SQL's NULL rules."""
        a = self.arg.expr()
        if (pa.types.is_floating(self.arg.type) and pa.types.is_floating(self.values.type)
                and self.values.type.bit_width > self.arg.type.bit_width):
            a = a.cast(self.values.type)  # (is_in would round the values to the column's)
        hit = pc.is_in(a, value_set=self.values)
        null = pc.scalar(pa.scalar(None, pa.bool_()))
        if self.has_null:
            hit = pc.if_else(hit, pc.scalar(True), null)
        return pc.if_else(pc.is_valid(a), hit, null)


@dataclass(frozen=True)
class Like(Node):
    """``s LIKE pattern`` (``ILIKE`` when ``ignore_case``)."""
    arg: Node
    pattern: str
    ignore_case: bool
    type = pa.bool_()

    def expr(self):
        """``match_like`` of the argument."""
        return pc.match_like(self.arg.expr(), pattern=self.pattern,
                             ignore_case=self.ignore_case)


def is_numeric(t: pa.DataType) -> bool:
    """Whether ``t`` is an integer, floating point or decimal type."""
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def is_text(t: pa.DataType) -> bool:
    """Whether ``t`` is a string or binary type (any width)."""
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t))
