"""Quality expectations: business rules on a delivery's rows, each with a declared consequence.

The protocol's checks compare rows with a declaration (rows.py); an expectation is a rule about
the source's data (an amount is never negative, a column has no nulls), which a receiver keeps for
itself ("Plans, checks and receipts"). A table declares them beside its contract, in the
vocabulary of common-sql's SQLColumnCheckOperator and SQLTableCheckOperator::

    Expectations.from_dict({
        "column_mapping": {                       # SQLColumnCheckOperator's, plus on_violation
            "amount_cents": {
                "null_check": {"equal_to": 0, "on_violation": "block"},
                "min": {"geq_to": 0, "on_violation": "warn"},
            },
        },
        "checks": {                               # SQLTableCheckOperator's, plus on_violation
            "lines_have_an_invoice": {
                "check_statement": "invoice_id IN (SELECT id FROM invoices)",
                "on_violation": "block",
            },
            "rows_near_last": {"row_count": {"tolerance": 0.5}, "on_violation": "warn"},
        },
    })

Column checks are null_check, distinct_check, unique_check, min and max, each compared with
equal_to, greater_than, geq_to, less_than or leq_to, optionally widened by tolerance, exactly as
common-sql compares them; a column check is named ``column.check`` as common-sql names it. A table
check is a named SQL boolean, check_statement: a row predicate (``amount_cents >= 0``) must hold
on every live row, an aggregate (``COUNT(*) > 0``) once over the staged rows, tombstones included.
row_count compares the delivery's live rows with the last accepted delivery's rows, within
tolerance (common-sql's equal_to with tolerance, equal_to bound to that count by the receiver).

Every expectation declares on_violation (Consequence), with no default, since an undeclared
policy must never read as a passed one:

    block   the delivery is rejected: a failed Check naming the expectation and what it observed
    hold    nothing is published; a person decides (Receiver.hold); until that lands, rejected
    warn    published: a Check that does not reject, its detail starting "violated (warn)"

An expectation the receiver cannot run (a column the delivery lacks, a bound of a type the column
cannot be compared with, an SQL error) is a violation of its consequence, never a pass. A table
declaring none gets one Check, NONE_DECLARED, whose detail is ``none_declared``.

Expectations run as set-based SQL over the staged rows: their aggregates join the row checks' one
counting scan (checks.StagedRows), and a table check is first compiled alone against no rows
(probe), which tells a row predicate (no row back) from an aggregate (one row back) and finds
its SQL errors before the scan. The results (Result) are the receipt's Checks and what a person is
shown; violating_rows selects the rows one expectation faults.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import Any, TypeAlias

from dogana_core.contract import IDENTIFIER, Contract
from dogana_core.errors import InvalidContract
from dogana_core.gate import RESERVED_CHECKS, Check, Receipt
from dogana_core.manifest import Manifest
from dogana_core.wire import decode_date, decode_datetime, encode_date, encode_datetime
from dogana_provider.checks import rows as checks
from dogana_provider.checks.rows import SOURCE_ACTIVE, CheckName, StagedRows
from dogana_provider.dialects import DECIMAL_PREFIX, Dialect, StatementFailed, display, run_or_fail
from dogana_provider.report.table import plural
from dogana_provider.staging import ROW_COLUMN, Staged, row_number

NONE_DECLARED = "expectations"
"""The name of the one Check a table declaring no expectation gets; its detail is NONE_DETAIL."""
NONE_DETAIL = "none_declared"

MET = "met"
VIOLATED = "violated"


class InvalidExpectation(InvalidContract):
    """An expectation that cannot be declared: names the expectation, the field and the rule."""


class Consequence(StrEnum):
    BLOCK = "block"
    HOLD = "hold"
    WARN = "warn"


class ColumnCheck(StrEnum):
    """SQLColumnCheckOperator's column checks, under its names."""

    NULL_CHECK = "null_check"
    DISTINCT_CHECK = "distinct_check"
    UNIQUE_CHECK = "unique_check"
    MIN = "min"
    MAX = "max"


OBSERVED = {
    ColumnCheck.NULL_CHECK: "null count",
    ColumnCheck.DISTINCT_CHECK: "distinct count",
    ColumnCheck.UNIQUE_CHECK: "duplicates",
    ColumnCheck.MIN: "min",
    ColumnCheck.MAX: "max",
}
"""What each column check observes, as a receipt's detail says it."""

RESERVED_NAMES: dict[str, str] = {
    **{name: "the spec's check" for name in RESERVED_CHECKS},
    **{str(name): f"the receiver's check (checks.CheckName.{name.name})" for name in CheckName},
    NONE_DECLARED: "the check saying no expectation is declared",
    SOURCE_ACTIVE: "the receiver's check of the table's activation",
}
"""Check names an expectation may not take, with whose they are."""

Bound: TypeAlias = int | float | str | date | datetime
NUMERIC = ("int", "float")


# Bounds ------------------------------------------------------------------------------------------


COMPARISONS = ("equal_to", "greater_than", "geq_to", "less_than", "leq_to")


@dataclass(frozen=True)
class Bounds:
    """What an observed value is compared with, as SQLColumnCheckOperator compares it.

    equal_to stands alone; greater_than or geq_to and less_than or leq_to bound it from below and
    above. tolerance widens every bound by abs(bound) * tolerance, outward, and needs numbers.
    """

    equal_to: Bound | None = None
    greater_than: Bound | None = None
    geq_to: Bound | None = None
    less_than: Bound | None = None
    leq_to: Bound | None = None
    tolerance: float | None = None

    def __post_init__(self) -> None:
        given = {n: getattr(self, n) for n in COMPARISONS if getattr(self, n) is not None}
        if not given:
            raise InvalidExpectation(
                "give one or more of equal_to, greater_than, geq_to, less_than, leq_to"
            )
        for name, value in given.items():
            _check_bound(value, name)
        if "equal_to" in given and len(given) > 1:
            raise InvalidExpectation(
                "equal_to cannot be given with a greater or less than comparison; "
                "use geq_to or leq_to"
            )
        if "greater_than" in given and "geq_to" in given:
            raise InvalidExpectation("give one of greater_than or geq_to")
        if "less_than" in given and "leq_to" in given:
            raise InvalidExpectation("give one of less_than or leq_to")
        kinds = {_kind(value) for value in given.values()}
        if len(kinds) > 1:
            raise InvalidExpectation(
                "bounds of one check are of one type, not "
                + " and ".join(f"{name} {_spell(value)}" for name, value in given.items())
            )
        if self.tolerance is not None:
            tolerance = self.tolerance
            if isinstance(tolerance, bool) or not isinstance(tolerance, int | float):
                raise InvalidExpectation(f"tolerance: {tolerance!r} is not a number")
            if not math.isfinite(tolerance) or tolerance < 0:
                raise InvalidExpectation(f"tolerance: {tolerance!r} is not a finite number >= 0")
            if kinds != {"number"}:
                raise InvalidExpectation("tolerance: widens numeric bounds only")
        low, high = self.low, self.high
        if low is not None and high is not None:
            (lo, lo_in), (hi, hi_in) = low, high
            if lo > hi or (lo == hi and not (lo_in and hi_in)):
                raise InvalidExpectation(
                    f"the bounds admit no value: {self.spelled} (use geq_to and leq_to for an "
                    "overlapping equality)"
                )

    @property
    def kind(self) -> str:
        """number, str, date or datetime: what the bounds are."""
        return next(_kind(getattr(self, n)) for n in COMPARISONS if getattr(self, n) is not None)

    def _widened(self, value: Any, direction: int) -> Any:
        if self.tolerance is None:
            return value
        return value + direction * abs(value) * self.tolerance

    @property
    def low(self) -> tuple[Any, bool] | None:
        """The lowest admitted value, tolerance applied, and whether it is admitted itself."""
        if self.equal_to is not None:
            return self._widened(self.equal_to, -1), True
        if self.geq_to is not None:
            return self._widened(self.geq_to, -1), True
        if self.greater_than is not None:
            return self._widened(self.greater_than, -1), False
        return None

    @property
    def high(self) -> tuple[Any, bool] | None:
        if self.equal_to is not None:
            return self._widened(self.equal_to, 1), True
        if self.leq_to is not None:
            return self._widened(self.leq_to, 1), True
        if self.less_than is not None:
            return self._widened(self.less_than, 1), False
        return None

    def admits(self, value: Any, convert: Callable[[Any], Any] = lambda v: v) -> bool:
        """Whether value is inside the bounds; convert turns a bound into value's form (a
        dialect's binding). Raises TypeError when the two cannot be compared."""
        low, high = self.low, self.high
        if low is not None:
            bound, inclusive = convert(low[0]), low[1]
            if value < bound or (value == bound and not inclusive):
                return False
        if high is not None:
            bound, inclusive = convert(high[0]), high[1]
            if value > bound or (value == bound and not inclusive):
                return False
        return True

    @property
    def spelled(self) -> str:
        parts = [
            f"{name} {_spell(getattr(self, name))}"
            for name in COMPARISONS
            if getattr(self, name) is not None
        ]
        if self.tolerance is not None:
            parts.append(f"tolerance {self.tolerance}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            name: _encode(getattr(self, name))
            for name in COMPARISONS
            if getattr(self, name) is not None
        }
        if self.tolerance is not None:
            found["tolerance"] = self.tolerance
        return found

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Bounds:
        values = {}
        for name in [*COMPARISONS, "tolerance"]:
            if name in data:
                values[name] = _decode(data[name], f"{where}.{name}")
        try:
            return cls(**values)
        except InvalidExpectation as exc:
            raise InvalidExpectation(f"{where}: {exc}") from None


def _check_bound(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | str | date):
        raise InvalidExpectation(
            f"{name}: {value!r} is not a number, a string, a date or a datetime"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidExpectation(f"{name}: {value!r} is not a finite number")
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise InvalidExpectation(f"{name}: {value} is outside the 64-bit integers databases hold")
    if isinstance(value, datetime) and (value.tzinfo is None or value.utcoffset() is None):
        raise InvalidExpectation(f"{name}: {value.isoformat()} carries no UTC offset")
    if isinstance(value, str) and re.search("[\ud800-\udfff]", value):
        raise InvalidExpectation(f"{name}: the string holds a lone surrogate")


def _kind(value: object) -> str:
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, datetime):
        return "datetime"
    if isinstance(value, date):
        return "date"
    return "str"


def _spell(value: object) -> str:
    return display(value, None)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return encode_datetime(value)
    if isinstance(value, date):
        return encode_date(value)
    return value


def _decode(data: Any, where: str) -> Any:
    try:
        if isinstance(data, dict) and set(data) == {"$date"}:
            return decode_date(data, where)
        if isinstance(data, dict) and set(data) == {"$datetime"}:
            return decode_datetime(data, where)
    except InvalidContract as exc:
        raise InvalidExpectation(str(exc)) from None
    if isinstance(data, bool) or not isinstance(data, int | float | str):
        raise InvalidExpectation(
            f"{where}: {data!r} is not a number, a string, a {{'$date': ...}} or a "
            "{'$datetime': ...}"
        )
    return data


# The three kinds of expectation ------------------------------------------------------------------


def _consequence(value: object, name: str) -> Consequence:
    if value is None:
        raise InvalidExpectation(
            f"{name}: on_violation is required (block, hold or warn): an undeclared policy "
            "must never read as passed"
        )
    if not isinstance(value, str) or value not in {str(c) for c in Consequence}:
        raise InvalidExpectation(f"{name}: on_violation {value!r} is not block, hold or warn")
    return Consequence(value)


@dataclass(frozen=True)
class ColumnExpectation:
    """One of SQLColumnCheckOperator's checks on one column, named column.check as it names it."""

    column: str
    check: ColumnCheck
    bounds: Bounds
    on_violation: Consequence

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not IDENTIFIER.fullmatch(self.column):
            raise InvalidExpectation(f"column_mapping: {self.column!r} is not a column name")
        if not isinstance(self.check, str) or self.check not in {str(c) for c in ColumnCheck}:
            raise InvalidExpectation(
                f"column_mapping.{self.column}: {self.check!r} is not a column check "
                f"({', '.join(ColumnCheck)})"
            )
        check = ColumnCheck(self.check)
        object.__setattr__(self, "check", check)
        object.__setattr__(self, "on_violation", _consequence(self.on_violation, self.name))
        if not isinstance(self.bounds, Bounds):
            raise InvalidExpectation(f"{self.name}: bounds must be Bounds")
        counts = (ColumnCheck.NULL_CHECK, ColumnCheck.DISTINCT_CHECK, ColumnCheck.UNIQUE_CHECK)
        if check in counts and self.bounds.kind != "number":
            raise InvalidExpectation(f"{self.name}: a count is compared with numbers")

    @property
    def name(self) -> str:
        return f"{self.column}.{self.check}"


@dataclass(frozen=True)
class TableExpectation:
    """SQLTableCheckOperator's check: a named SQL boolean over the staged rows.

    A row predicate must hold on every live row (a null counts as false, as common-sql counts
    it); an aggregate must hold once. The statement is the DAG author's SQL, like common-sql's,
    checked to be one expression: no ``;``, no comment, no ``?`` placeholder, balanced
    parentheses, outside its quoted strings and names.
    """

    name: str
    check_statement: str
    on_violation: Consequence

    def __post_init__(self) -> None:
        _check_name(self.name)
        object.__setattr__(self, "on_violation", _consequence(self.on_violation, self.name))
        if not isinstance(self.check_statement, str) or not self.check_statement.strip():
            raise InvalidExpectation(f"{self.name}: check_statement is an SQL boolean expression")
        problem = _not_one_expression(self.check_statement)
        if problem:
            raise InvalidExpectation(f"{self.name}: check_statement {problem}")


@dataclass(frozen=True)
class RowCountExpectation:
    """The delivery's live rows within tolerance of the last accepted delivery's rows.

    The last count is bound by the receiver when the delivery is checked, never written in SQL;
    a table with no accepted delivery yet has nothing to compare with, which the result says.
    """

    name: str
    tolerance: float
    on_violation: Consequence

    def __post_init__(self) -> None:
        _check_name(self.name)
        object.__setattr__(self, "on_violation", _consequence(self.on_violation, self.name))
        tolerance = self.tolerance
        if (
            isinstance(tolerance, bool)
            or not isinstance(tolerance, int | float)
            or not math.isfinite(tolerance)
            or tolerance < 0
        ):
            raise InvalidExpectation(
                f"{self.name}: row_count.tolerance {tolerance!r} is not a finite number >= 0"
            )


Expectation: TypeAlias = ColumnExpectation | TableExpectation | RowCountExpectation


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise InvalidExpectation(
            f"checks: {name!r} is not a check name (a letter or _, then letters, digits or _; at "
            "most 63 characters)"
        )
    if name in RESERVED_NAMES:
        raise InvalidExpectation(
            f"checks: expectation {name!r} collides with {RESERVED_NAMES[name]} {name!r}: "
            "a receipt could not tell them apart; rename the expectation"
        )


def _not_one_expression(sql: str) -> str | None:
    """Why sql is not one expression that can be wrapped in parentheses, or None."""
    depth, index, quote = 0, 0, None
    while index < len(sql):
        char = sql[index]
        if quote is not None:
            if char == quote:
                if sql[index + 1 : index + 2] == quote:  # a doubled quote stays inside
                    index += 1
                else:
                    quote = None
        elif char in "'\"`":
            quote = char
        elif char == ";":
            return "holds ';': one expression, not statements"
        elif sql.startswith(("--", "/*", "*/"), index):
            return "holds a comment"
        elif char == "?":
            return "holds '?', which the driver would take for a parameter"
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return "closes a parenthesis it did not open"
        index += 1
    if quote is not None:
        return f"leaves a {quote} quote open"
    if depth:
        return "leaves a parenthesis open"
    return None


# The declaration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expectations:
    """A table's expectations, in the order declared; empty declares none."""

    items: tuple[Expectation, ...] = ()

    def __post_init__(self) -> None:
        items = tuple(self.items)
        seen: set[str] = set()
        for item in items:
            if not isinstance(item, ColumnExpectation | TableExpectation | RowCountExpectation):
                raise InvalidExpectation(f"{item!r} is not an expectation")
            if item.name in seen:
                raise InvalidExpectation(f"{item.name}: declared twice")
            seen.add(item.name)
        object.__setattr__(self, "items", items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Any:
        return iter(self.items)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(item.name for item in self.items)

    def to_dict(self) -> dict[str, Any]:
        """common-sql's two mappings, each check's dict carrying its on_violation."""
        columns: dict[str, dict[str, Any]] = {}
        checks: dict[str, Any] = {}
        for item in self.items:
            if isinstance(item, ColumnExpectation):
                columns.setdefault(item.column, {})[str(item.check)] = {
                    **item.bounds.to_dict(),
                    "on_violation": str(item.on_violation),
                }
            elif isinstance(item, TableExpectation):
                checks[item.name] = {
                    "check_statement": item.check_statement,
                    "on_violation": str(item.on_violation),
                }
            else:
                checks[item.name] = {
                    "row_count": {"tolerance": item.tolerance},
                    "on_violation": str(item.on_violation),
                }
        return {"column_mapping": columns, "checks": checks}

    @classmethod
    def from_dict(cls, data: Any, where: str = "expectations") -> Expectations:
        """Read the dict to_dict writes (either mapping may be left out); InvalidExpectation
        names the field and the rule for anything else."""
        if isinstance(data, Expectations):
            return data
        if not isinstance(data, Mapping):
            raise InvalidExpectation(
                f"{where}: expected a mapping with column_mapping and checks, got "
                f"{type(data).__name__}"
            )
        unknown = set(data) - {"column_mapping", "checks"}
        if unknown:
            raise InvalidExpectation(
                f"{where}: {', '.join(sorted(map(str, unknown)))}: not column_mapping or checks"
            )
        items: list[Expectation] = []
        columns = _mapping(data.get("column_mapping", {}), f"{where}.column_mapping")
        for column, kinds in columns.items():
            at = f"{where}.column_mapping.{column}"
            for check, spec in _mapping(kinds, at).items():
                spec = _mapping(spec, f"{at}.{check}")
                _refuse_unknown(spec, {*COMPARISONS, "tolerance", "on_violation"}, f"{at}.{check}")
                try:
                    items.append(
                        ColumnExpectation(
                            column,
                            check,  # type: ignore[arg-type]
                            Bounds.from_dict(spec, f"{at}.{check}"),
                            spec.get("on_violation"),  # type: ignore[arg-type]
                        )
                    )
                except InvalidExpectation as exc:
                    raise InvalidExpectation(_at(f"{at}.{check}", exc)) from None
        checks = _mapping(data.get("checks", {}), f"{where}.checks")
        for name, spec in checks.items():
            at = f"{where}.checks.{name}"
            spec = _mapping(spec, at)
            kinds = [k for k in ("check_statement", "row_count") if k in spec]
            if len(kinds) != 1:
                raise InvalidExpectation(f"{at}: give check_statement or row_count, one of them")
            try:
                if kinds == ["check_statement"]:
                    _refuse_unknown(spec, {"check_statement", "on_violation"}, at)
                    items.append(
                        TableExpectation(name, spec["check_statement"], spec.get("on_violation"))  # type: ignore[arg-type]
                    )
                else:
                    _refuse_unknown(spec, {"row_count", "on_violation"}, at)
                    count = _mapping(spec["row_count"], f"{at}.row_count")
                    if set(count) != {"tolerance"}:
                        raise InvalidExpectation(
                            "row_count: compares with the last accepted delivery's row count "
                            "and takes tolerance only; for fixed bounds write a check_statement "
                            "such as 'COUNT(*) >= 1'"
                        )
                    items.append(
                        RowCountExpectation(name, count["tolerance"], spec.get("on_violation"))  # type: ignore[arg-type]
                    )
            except InvalidExpectation as exc:
                raise InvalidExpectation(_at(at, exc)) from None
        try:
            return cls(tuple(items))
        except InvalidExpectation as exc:
            raise InvalidExpectation(f"{where}: {exc}") from None


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidExpectation(f"{where}: expected a mapping by name, got {value!r:.80}")
    return value


def _refuse_unknown(spec: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = set(spec) - known
    if "partition_clause" in unknown:
        raise InvalidExpectation(
            f"{where}.partition_clause: not supported: expectations run on the delivery's rows"
        )
    if unknown:
        raise InvalidExpectation(
            f"{where}: {', '.join(sorted(unknown))}: not one of {', '.join(sorted(known))}"
        )


def _at(where: str, exc: Exception) -> str:
    text = str(exc)
    return text if text.startswith(where) else f"{where}: {text}"


# Results -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One expectation on one delivery: what was observed, and whether it was violated.

    rows counts the live rows at fault where rows can be (a null, a row failing a predicate, a
    value beyond a min or max bound); None where the rule is about the whole delivery (a distinct
    count, an aggregate, the row count). error says why the expectation could not run, which is a
    violation.
    """

    expectation: Expectation
    violated: bool
    observed: str = ""
    rows: int | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return self.expectation.name

    @property
    def consequence(self) -> Consequence:
        return self.expectation.on_violation

    @property
    def detail(self) -> str:
        """Starts with the verdict, so no reader takes a violation for a pass."""
        if self.error is not None:
            return f"{VIOLATED} ({self.consequence}): could not run: {self.error}"
        rows = "" if self.rows is None else f", {plural(self.rows, 'row')}"
        verdict = f"{VIOLATED} ({self.consequence})" if self.violated else MET
        return f"{verdict}: {self.observed}{rows}"

    def check(self, *, held: bool = False) -> Check:
        """The receipt's Check: a block or hold violation fails it (rejects), a warn does not.

        held=True passes a violated hold: the acceptance a released hold publishes (Receiver.hold).
        """
        passed = not self.violated or self.consequence is Consequence.WARN
        if self.violated and self.consequence is Consequence.HOLD:
            passed = held
        return Check(self.name, passed, self.detail)


def none_declared() -> Check:
    """The one Check of a table declaring no expectation: it rejects nothing and says so."""
    return Check(NONE_DECLARED, True, NONE_DETAIL)


def checks_of(results: Sequence[Result], *, held: bool = False) -> list[Check]:
    """The receipt's Checks for a delivery's results: one per expectation, or none_declared."""
    if not results:
        return [none_declared()]
    return [result.check(held=held) for result in results]


def held(results: Sequence[Result], failed: Iterable[str]) -> bool:
    """Whether a delivery whose failed checks are ``failed`` is held: at least one violated hold,
    and nothing else failed (no protocol check, no block)."""
    holds = {r.name for r in results if r.violated and r.consequence is Consequence.HOLD}
    failed = set(failed)
    return bool(holds) and failed <= holds and bool(failed)


# Reading receipts --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reported:
    """What a receipt says of its expectations: none declared, or each one's check."""

    declared: bool
    checks: tuple[Check, ...] = ()

    @property
    def violations(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.detail.startswith(VIOLATED))

    @property
    def summary(self) -> str:
        """``none_declared``, or how many were met and each violation with its detail."""
        if not self.declared:
            return NONE_DETAIL
        met = len(self.checks) - len(self.violations)
        found = [f"{met} met"] + [f"{c.name} {c.detail}" for c in self.violations]
        return "; ".join(found)

    @property
    def short(self) -> str:
        """``none_declared``, or the counts: ``2 met, 1 violated (warn)``."""
        if not self.declared:
            return NONE_DETAIL
        counts: dict[str, int] = {}
        for check in self.violations:
            verdict = check.detail.split(":", 1)[0]
            counts[verdict] = counts.get(verdict, 0) + 1
        met = len(self.checks) - len(self.violations)
        return ", ".join([f"{met} met", *(f"{n} {verdict}" for verdict, n in counts.items())])

    def extra(self) -> dict[str, Any]:
        """For an Asset event's extra: none_declared, or each violation by name."""
        if not self.declared:
            return {"expectations": NONE_DETAIL}
        return {
            "expectations": {
                "met": len(self.checks) - len(self.violations),
                "violations": {c.name: c.detail for c in self.violations},
            }
        }


_PROTOCOL = {*RESERVED_CHECKS, *(str(name) for name in CheckName), SOURCE_ACTIVE}


def reported(receipt: Receipt) -> Reported:
    """A receipt's expectation checks: those no protocol or receiver check names, whose detail
    starts with an expectation's verdict (Result.detail), so that a receiver check added later is
    never taken for one. A receipt from before expectations existed, or one decided before they
    ran, reads as none declared."""
    found = tuple(
        c
        for c in receipt.checks
        if c.name not in _PROTOCOL
        and c.name != NONE_DECLARED
        and c.detail.startswith((f"{MET}:", f"{VIOLATED} ("))
    )
    return Reported(bool(found), found)


def column_of(name: str) -> str | None:
    """The column an expectation's check name is on: a column check is named column.check,
    and a table check's name has no dot (_check_name); None for a table check."""
    column, dot, check = name.rpartition(".")
    return column if dot and check in set(ColumnCheck) else None


# Running them ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Aggregate:
    """One expectation's aggregates in the shared scan, and how its values become a Result."""

    sql: tuple[tuple[str, tuple[Any, ...]], ...]
    result: Callable[[tuple[Any, ...]], Result]


@dataclass
class Evaluation:
    """A delivery's expectations planned against its staged table: what joins the scan."""

    expectations: Expectations
    settled: dict[str, Result] = field(default_factory=dict)
    """Results known before the scan: could not run, or needing no SQL (row_count)."""
    aggregates: dict[str, Aggregate] = field(default_factory=dict)

    def scan(self) -> list[tuple[tuple[str, tuple[Any, ...]], ...]]:
        """What checks.StagedRows adds to its counting scan, one group per expectation."""
        return [aggregate.sql for aggregate in self.aggregates.values()]

    def results(self, values: Sequence[tuple[Any, ...] | StatementFailed]) -> list[Result]:
        """Each expectation's Result, in declared order, from the scan's values for its groups."""
        by_name = dict(self.settled)
        for (name, aggregate), found in zip(self.aggregates.items(), values, strict=True):
            if isinstance(found, StatementFailed):
                by_name[name] = Result(aggregate_of(self, name), True, error=found.message)
            else:
                try:
                    by_name[name] = aggregate.result(found)
                except TypeError as exc:  # a value and its bound Python cannot order
                    by_name[name] = Result(aggregate_of(self, name), True, error=str(exc))
        return [by_name[item.name] for item in self.expectations]


def aggregate_of(evaluation: Evaluation, name: str) -> Expectation:
    return {item.name: item for item in evaluation.expectations}[name]


def plan(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    expectations: Expectations,
    *,
    live: tuple[str, Sequence[Any]],
    live_rows: Callable[[], int],
    last_rows: int | None,
) -> Evaluation:
    """Plan each expectation against the staged table: its aggregates, or its result already.

    live is the SQL condition (and its parameters) of a live row; live_rows the count of them
    (from the scan, read after it); last_rows the last accepted delivery's rows, None if none.
    """
    evaluation = Evaluation(expectations)
    kinds = dict(staged.columns)
    for item in expectations:
        if isinstance(item, ColumnExpectation):
            planned = _column(connection, dialect, staged, kinds, item, live, live_rows)
        elif isinstance(item, TableExpectation):
            planned = _table(connection, dialect, staged, item, live)
        else:
            planned = _row_count(item, live_rows, last_rows)
        if isinstance(planned, Result):
            evaluation.settled[item.name] = planned
        else:
            evaluation.aggregates[item.name] = planned
    return evaluation


def verify(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    contract: Contract,
    manifest: Manifest,
    expectations: Expectations,
    *,
    published: str | None,
    last_rows: int | None,
) -> tuple[list[Check], list[Result]]:
    """The row checks (rows.verify) and every expectation of one staged delivery, their
    aggregates in the row checks' one counting scan. The Checks are the row checks'; each
    Result becomes its Check through checks_of."""
    if staged.unreadable is not None:
        found = checks.verify(connection, dialect, staged, contract, manifest, published=published)
        why = f"the file's rows could not be staged: {staged.unreadable}"
        return found, unrunnable(expectations, why)
    rows = StagedRows(connection, dialect, staged, contract, manifest)
    # Expectations judge live rows. A delivery declaring no tombstones has none, or its own
    # checks (tombstones, deleted_not_null) reject it: its rows are taken whole, sparing every
    # aggregate a CASE on the deleted column.
    whole = manifest.tombstones == 0
    evaluation = plan(
        connection,
        dialect,
        staged,
        expectations,
        live=("1 = 1", []) if whole else rows.live,
        live_rows=lambda: rows.counts["total" if whole else "live"],
        last_rows=last_rows,
    )
    rows.extra = evaluation.scan()
    found = checks.verify(
        connection, dialect, staged, contract, manifest, published=published, rows=rows
    )
    rows.counts  # noqa: B018 - the scan, when no row check read it
    return found, evaluation.results(rows.extra_values)


def unrunnable(expectations: Expectations, why: str) -> list[Result]:
    """Every expectation as a violation: the rows could not be staged to run them on."""
    return [Result(item, True, error=why) for item in expectations]


def _value(dialect: Dialect, column: str, logical: str) -> str:
    """A column as its values compare: code points for strings; numbers for SQLite's decimal
    text, which would otherwise compare as text ("10" < "9")."""
    quoted = dialect.quote(column)
    if dialect.stored_decimal(logical):
        return f"CAST({quoted} AS REAL)"
    return dialect.ordered(quoted, logical)


def _comparable(bounds: Bounds, logical: str) -> bool:
    kind = bounds.kind
    if logical in NUMERIC or logical.startswith(DECIMAL_PREFIX):
        return kind == "number"
    return kind == logical


def _only_live(expression: str, live: tuple[str, Sequence[Any]]) -> tuple[str, tuple[Any, ...]]:
    """expression, or NULL for a row that is not live (aggregates skip NULLs)."""
    condition, params = live
    if condition == "1 = 1":
        return expression, ()
    return f"CASE WHEN {condition} THEN {expression} END", tuple(params)


def _column(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    kinds: Mapping[str, str],
    item: ColumnExpectation,
    live: tuple[str, Sequence[Any]],
    live_rows: Callable[[], int],
) -> Aggregate | Result:
    logical = kinds.get(item.column)
    if logical is None:
        return Result(
            item,
            True,
            error=f"the delivery has no column {item.column!r} "
            f"(it has {', '.join(kinds) or 'none'})",
        )
    check, bounds = item.check, item.bounds
    if check in (ColumnCheck.MIN, ColumnCheck.MAX) and not _comparable(bounds, logical):
        return Result(
            item,
            True,
            error=f"cannot compare column {item.column} ({logical}) with {bounds.spelled} "
            f"({bounds.kind})",
        )
    value, params = _only_live(_value(dialect, item.column, logical), live)
    # Counting compares values for equality only, which no collation changes here: the plain
    # column, so that a unique_check on the key shares the row checks' own COUNT(DISTINCT).
    plain, _ = _only_live(dialect.quote(item.column), live)
    if check is ColumnCheck.NULL_CHECK:
        # COUNT of the values, the nulls the live rows less them: cheaper than a CASE per row.
        counted = ((f"COUNT({plain})", params),)
        return Aggregate(
            counted,
            lambda found: _counted(item, live_rows() - int(found[0] or 0), rows=True),
        )
    if check is ColumnCheck.DISTINCT_CHECK:
        distinct = ((f"COUNT(DISTINCT {plain})", params),)
        return Aggregate(distinct, lambda found: _counted(item, int(found[0] or 0), rows=False))
    if check is ColumnCheck.UNIQUE_CHECK:
        sql = ((f"COUNT({plain})", params), (f"COUNT(DISTINCT {plain})", params))
        return Aggregate(
            sql, lambda found: _counted(item, int(found[0] or 0) - int(found[1] or 0), rows=False)
        )
    aggregate = "MIN" if check is ColumnCheck.MIN else "MAX"

    def extreme(found: tuple[Any, ...]) -> Result:
        observed = found[0]
        if observed is None:
            return Result(
                item,
                False,
                f"{OBSERVED[check]} none: no live row has a value ({bounds.spelled})",
            )
        spelled = f"{OBSERVED[check]} {display(observed, logical)} ({bounds.spelled})"
        if bounds.admits(observed, lambda bound: _bind(dialect, logical, bound)):
            return Result(item, False, spelled)
        # Violated: one more pass counts the rows beyond the bound, only now.
        return Result(item, True, spelled, rows=_beyond(connection, dialect, staged, item, live))

    return Aggregate(((f"{aggregate}({value})", params),), extreme)


def _beyond(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    item: ColumnExpectation,
    live: tuple[str, Sequence[Any]],
) -> int | None:
    """The live rows a violated min (max) faults: those below (above) its bound; None when the
    check has no such bound or the count cannot run."""
    where = _beyond_condition(dialect, dict(staged.columns), item)
    if where is None:
        return None
    condition, params = live
    found = run_or_fail(
        connection,
        dialect,
        f"SELECT COUNT(*) FROM {dialect.quote(staged.table)} WHERE ({condition}) AND {where[0]}",
        (*params, *where[1]),
    )
    return None if isinstance(found, StatementFailed) else int(found[0][0])


def _beyond_condition(
    dialect: Dialect, kinds: Mapping[str, str], item: ColumnExpectation
) -> tuple[str, tuple[Any, ...]] | None:
    """The condition of a value beyond a min's lower (a max's upper) bound, and its parameter."""
    logical = kinds.get(item.column)
    if logical is None or item.check not in (ColumnCheck.MIN, ColumnCheck.MAX):
        return None
    if not _comparable(item.bounds, logical):
        return None
    low = item.check is ColumnCheck.MIN
    beyond = item.bounds.low if low else item.bounds.high
    if beyond is None:
        return None
    bound, inclusive = beyond
    operator = ("<" if inclusive else "<=") if low else (">" if inclusive else ">=")
    value = _value(dialect, item.column, logical)
    return f"{value} {operator} {dialect.placeholder}", (_bind(dialect, logical, bound),)


def _bind(dialect: Dialect, logical: str, bound: Any) -> Any:
    """A bound as the staged values of its column compare with it."""
    if logical in NUMERIC or logical.startswith(DECIMAL_PREFIX):
        return bound
    return dialect.bind(logical, bound)


def _counted(item: ColumnExpectation, count: int, *, rows: bool) -> Result:
    admitted = item.bounds.admits(count)
    spelled = f"{OBSERVED[item.check]} {count} ({item.bounds.spelled})"
    return Result(item, not admitted, spelled, rows=count if rows and not admitted else None)


def _statement(dialect: Dialect, sql: str) -> str:
    """A check_statement as the driver must receive it beside bound parameters: format-style
    drivers read % as a placeholder's start, so a modulo or a LIKE pattern's % is doubled."""
    return sql.replace("%", "%%") if dialect.placeholder == "%s" else sql


def _table(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    item: TableExpectation,
    live: tuple[str, Sequence[Any]],
) -> Aggregate | Result:
    """A check_statement probed against no rows: no row back is a row predicate, one row an
    aggregate; an SQL error means it cannot run."""
    statement = _statement(dialect, item.check_statement)
    table = dialect.quote(staged.table)
    probe = run_or_fail(
        connection,
        dialect,
        f"SELECT CASE WHEN ({statement}) THEN 1 ELSE 0 END FROM {table} WHERE 1 = 0",
        (),
    )
    if isinstance(probe, StatementFailed):
        return Result(item, True, error=probe.message)
    if probe:  # an aggregate: once, over every staged row
        sql = ((f"CASE WHEN ({statement}) THEN 1 ELSE 0 END", ()),)
        return Aggregate(
            sql,
            lambda found: Result(
                item, not found[0], f"{item.check_statement} is {'true' if found[0] else 'false'}"
            ),
        )
    condition, params = live
    skip = "" if condition == "1 = 1" else f"WHEN NOT ({condition}) THEN 0 "
    failing = (f"SUM(CASE {skip}WHEN ({statement}) THEN 0 ELSE 1 END)", tuple(params))

    def counted(found: tuple[Any, ...]) -> Result:
        count = int(found[0] or 0)
        spelled = f"{plural(count, 'live row')} not satisfying {item.check_statement}"
        return Result(item, bool(count), spelled, rows=count if count else None)

    return Aggregate((failing,), counted)


def _row_count(
    item: RowCountExpectation, live_rows: Callable[[], int], last_rows: int | None
) -> Aggregate:
    """No SQL of its own: the scan counts the live rows, the store holds the last count."""

    def compared(_: tuple[Any, ...]) -> Result:
        count = live_rows()
        if last_rows is None:
            return Result(
                item,
                False,
                f"{plural(count, 'live row')}; no accepted delivery yet to compare with",
            )
        bounds = Bounds(equal_to=last_rows, tolerance=item.tolerance)
        return Result(
            item,
            not bounds.admits(count),
            f"{plural(count, 'live row')}, the last accepted delivery {last_rows} "
            f"(tolerance {item.tolerance})",
        )

    return Aggregate((), compared)


# The rows a person is shown ----------------------------------------------------------------------


@dataclass(frozen=True)
class Violating:
    """Rows one expectation faults, up to a limit, with their count; or why there are none to
    show (a rule about the whole delivery, or one that could not run)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    count: int | None
    reason: str | None = None


def violating_rows(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    expectation: Expectation,
    *,
    contract: Contract,
    limit: int = 20,
) -> Violating:
    """The staged live rows expectation faults, first ``limit`` in file order (ROW_COLUMN first),
    and how many there are. A rule about the whole delivery (distinct count, an aggregate, the
    row count) faults no row in particular, and says so."""
    columns = (ROW_COLUMN, *(name for name, _ in staged.columns))
    found = faulting(connection, dialect, staged, expectation, contract=contract)
    if isinstance(found, str):
        return Violating(columns, (), None, found)
    condition, every = found
    filtered = f"FROM {dialect.quote(staged.table)} WHERE {condition}"
    ((count,),) = _fetch(connection, f"SELECT COUNT(*) {filtered}", every)
    # The row number is ROW_COLUMN's, or on SQLite the rowid (staging.row_number).
    row = row_number(dialect, (name for name, _ in staged.columns))
    quoted_columns = ", ".join([row, *(dialect.quote(c) for c in columns[1:])])
    rows = _fetch(
        connection,
        f"SELECT {quoted_columns} {filtered} ORDER BY {row} LIMIT {int(limit)}",
        every,
    )
    return Violating(columns, tuple(tuple(row) for row in rows), int(count))


def faulting(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    expectation: Expectation,
    *,
    contract: Contract,
) -> tuple[str, tuple[Any, ...]] | str:
    """The SQL condition (and its parameters) of the staged live rows expectation faults; or,
    for a rule that faults no row in particular or cannot run, why there are none."""
    kinds = dict(staged.columns)
    condition, params = checks.live_condition(dialect, staged, contract)
    where: str | None = None
    where_params: tuple[Any, ...] = ()
    if isinstance(expectation, ColumnExpectation):
        logical = kinds.get(expectation.column)
        if logical is None:
            return f"the delivery has no column {expectation.column}"
        quoted = dialect.quote(expectation.column)
        check = expectation.check
        if check is ColumnCheck.NULL_CHECK:
            where = f"{quoted} IS NULL"
        elif check is ColumnCheck.UNIQUE_CHECK:
            table = dialect.quote(staged.table)
            where = (
                f"{quoted} IN (SELECT {quoted} FROM {table} WHERE {condition} "
                f"GROUP BY {quoted} HAVING COUNT(*) > 1)"
            )
            where_params = tuple(params)
        elif check in (ColumnCheck.MIN, ColumnCheck.MAX):
            found = _beyond_condition(dialect, kinds, expectation)
            if found is not None:
                where, where_params = found
    elif isinstance(expectation, TableExpectation):
        statement = _statement(dialect, expectation.check_statement)
        probe = run_or_fail(
            connection,
            dialect,
            f"SELECT CASE WHEN ({statement}) THEN 1 ELSE 0 END "
            f"FROM {dialect.quote(staged.table)} WHERE 1 = 0",
            (),
        )
        if isinstance(probe, StatementFailed):
            return f"could not run: {probe.message}"
        if not probe:
            where = f"CASE WHEN ({statement}) THEN 0 ELSE 1 END = 1"
    if where is None:
        return "a rule about the whole delivery faults no row"
    return f"({condition}) AND ({where})", (*params, *where_params)


def unreleased(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    result: Result,
    *,
    contract: Contract,
    released: tuple[str, tuple[Any, ...]],
) -> Result:
    """A violated hold judged again without the rows a person released earlier (released: the
    SQL condition of a staged row no release covers, and its parameters): met when every row
    it faults was released, else violated by the others alone. Any other result as it is."""
    if not result.violated or result.consequence is not Consequence.HOLD or result.error:
        return result
    found = faulting(connection, dialect, staged, result.expectation, contract=contract)
    if isinstance(found, str):
        return result
    condition, params = found
    table = dialect.quote(staged.table)
    ((fresh, faulted),) = _fetch(
        connection,
        f"SELECT (SELECT COUNT(*) FROM {table} WHERE {condition} AND {released[0]}), "
        f"(SELECT COUNT(*) FROM {table} WHERE {condition})",
        (*params, *released[1], *params),
    )
    fresh, faulted = int(fresh), int(faulted)
    if fresh == faulted:
        return result
    if not fresh:
        return Result(result.expectation, False, f"{result.observed}, all released earlier")
    observed = f"{result.observed}, {faulted - fresh} released earlier"
    return Result(result.expectation, True, observed, rows=fresh)


def _fetch(connection: Any, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    cursor = connection.cursor()
    try:
        cursor.execute(sql, tuple(params))
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        cursor.close()
