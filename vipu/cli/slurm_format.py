"""Slurm's output formats, in one place for `vipu queue`, `history`, `info` and `priority`: squeue's, sinfo's and
sprio's `%[[.]size]type[suffix]` (-o), squeue's and sinfo's `Name[:[.]size[suffix]]` lists (-O), sacct's
`Name%width` lists (-o), and the sort keys of -S. Each command says what its fields are (a Column each); this module
reads what the user typed against them and lays the rows out as the Slurm command would.

As Slurm prints them: in a % format the text between fields is printed as it is (`%.18i %.9P` has a space after
the id), a size pads the field (`.` right-justifies it; `-`, printf's spelling, left-justifies it as no sign does)
and cuts a longer value to the size, but for node lists, which squeue never cuts. In sacct's lists a width is
right-justified (`JobName%30`), a negative one left-justified (`%-30`), a longer value is cut with a `+` at the
end, and every field is followed by a space; -p and -P print the values between `|` instead."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from vipu.cli.failure import BAD_INPUT, fail

FIT = -1  # a size as wide as the widest value: what sinfo's `#` stands for in its own default formats


@dataclass(frozen=True)
class Column:
    """One field a listing can show: its header, its text for a row, and what -S sorts it by (its text if no key).
    `needs` names what the command must fetch for it (a full listing, the IPU-Machines); `width` is its default
    width in sacct's lists (negative: left-justified)."""

    header: str
    value: Callable[[Any], str]
    key: Callable[[Any], Any] | None = None
    cut: bool = True
    needs: frozenset[str] = frozenset()
    width: int = 10

    def sort_key(self, row) -> Any:
        return self.key(row) if self.key is not None else self.value(row)


@dataclass(frozen=True)
class Cell:
    """A column placed in a layout: its size (0: as wide as its value), justification and the text after it."""

    column: Column
    size: int = 0
    right: bool = False
    suffix: str = ""


@dataclass(frozen=True)
class Layout:
    cells: tuple[Cell, ...]
    prefix: str = ""  # the text before the first field
    needs: frozenset[str] = field(default=frozenset(), compare=False)

    @classmethod
    def of(cls, cells: Iterable[Cell], prefix: str = "") -> Layout:
        cells = tuple(cells)
        return cls(cells, prefix, frozenset().union(*(c.column.needs for c in cells)))


def _names(columns: dict[str, Column], mark: str = "%") -> str:
    return " ".join(f"{mark}{k}" for k in sorted(columns, key=lambda k: (k.lower(), k)))


_TOKEN = re.compile(r"([.-]?)([0-9#]*)(.?)(.*)", re.S)


def percent_layout(text: str, columns: dict[str, Column], flag: str) -> Layout:
    """squeue's, sinfo's and sprio's `%[[.]size]type[suffix]` format: the text before the first % is printed first,
    and each suffix after its field. An unknown field letter is refused, naming the flag and the letters known."""
    prefix, percent, rest = text.partition("%")
    if not percent:
        fail("vipu", f"{flag} {text!r} names no field; give fields as %LETTER, e.g. {flag} '%.18i %.8j %R'"
             f" (fields: {_names(columns)})", BAD_INPUT)
    cells = []
    for token in rest.split("%"):
        if not token:  # `%%`, or a % at the end: skipped, as Slurm's strtok skips empty tokens
            continue
        align, size, letter, suffix = _TOKEN.fullmatch(token).groups()  # type: ignore[union-attr]
        if letter not in columns:
            shown = f"%{align}{size}{letter}" if letter else f"a % with {align + size!r} and no letter"
            fail("vipu", f"{flag}: {shown} is not a field here; use one of {_names(columns)}", BAD_INPUT)
        if "#" in size and size != "#":
            fail("vipu", f"{flag}: %{align}{size}{letter} has a size that is not a number; write e.g."
                 f" %.10{letter}", BAD_INPUT)
        cells.append(Cell(columns[letter], FIT if size == "#" else int(size or 0), align == ".", suffix))
    return Layout.of(cells, prefix)


def named_layout(text: str, columns: dict[str, Column], flag: str, default: int = 20) -> Layout:
    """squeue's and sinfo's -O list, `Name[:[.]size[suffix]],...`: names in any case, `default` characters each
    unless a size is given."""
    known = {name.lower(): column for name, column in columns.items()}
    cells = []
    for token in text.split(","):
        name, colon, spec = token.strip().partition(":")
        column = known.get(name.lower())
        if column is None:
            fail("vipu", f"{flag}: {name!r} is not a field here; use any of {', '.join(columns)} (as Name or"
                 f" Name:WIDTH, e.g. {flag} JobID:10,Name:20)", BAD_INPUT)
        if not colon:
            cells.append(Cell(column, default))
            continue
        right = spec.startswith(".")
        size, suffix = re.fullmatch(r"([0-9]*)(.*)", spec[right:], re.S).groups()  # type: ignore[union-attr]
        cells.append(Cell(column, int(size or 0), right, suffix))
    return Layout.of(cells)


def fit(text: str, size: int, right: bool, cut: bool = True) -> str:
    if size <= 0:
        return text
    if cut:
        text = text[:size]
    return text.rjust(size) if right else text.ljust(size)


def render(layout: Layout, rows: Sequence, header: bool = True) -> list[str]:
    """The lines a % or -O layout prints: the header (if wanted), then a line a row."""
    values = [[cell.column.value(row) for cell in layout.cells] for row in rows]
    sizes = [max([len(cell.column.header), *(len(v[i]) for v in values)]) if cell.size == FIT else cell.size
             for i, cell in enumerate(layout.cells)]

    def line(texts: list[str]) -> str:
        return layout.prefix + "".join(fit(t, size, c.right, c.column.cut) + c.suffix
                                       for t, size, c in zip(texts, sizes, layout.cells))

    return ([line([c.column.header for c in layout.cells])] if header else []) + [line(v) for v in values]


def sort_keys(spec: str, columns: dict[str, Column], flag: str) -> list[tuple[Column, bool]]:
    """squeue's -S: field letters, each ascending or, after `-`, descending (`+` ascending), commas between them
    optional; the first letter is the first key. Each key: (its column, descending)."""
    keys: list[tuple[Column, bool]] = []
    sign = ""  # a + or - waiting for its letter
    for char in spec.strip():
        if sign and char in "+-,":
            _dangling(flag, sign, spec)
        if char == ",":
            continue
        if char in "+-":
            sign = char
            continue
        if char not in columns:
            fail("vipu", f"{flag}: {char!r} in {spec!r} is not a sort key; use field letters, each with - for"
                 f" descending, e.g. {flag} t,-p (keys: {_names(columns, '')})", BAD_INPUT)
        keys.append((columns[char], sign == "-"))
        sign = ""
    if sign and keys:
        _dangling(flag, sign, spec)
    if not keys:
        fail("vipu", f"{flag} {spec!r} names no field; give letters such as i, or -p for descending", BAD_INPUT)
    return keys


def _dangling(flag: str, sign: str, spec: str) -> None:
    fail("vipu", f"{flag}: {sign!r} in {spec!r} is not followed by a field letter; write it just before one, e.g."
         f" {flag} t,-p", BAD_INPUT)


def sort_rows(rows: Iterable, keys: list[tuple[Column, bool]]) -> list:
    """Rows in the order of `keys`; stable: rows equal in every key keep their order."""
    ordered = list(rows)
    for column, descending in reversed(keys):  # a stable sort per key, the last key first
        ordered.sort(key=column.sort_key, reverse=descending)
    return ordered


# -- sacct ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    """A column in sacct's list: its name as the header, and its width (negative: left-justified)."""

    name: str
    column: Column
    width: int


def sacct_fields(text: str, columns: dict[str, Column], flag: str, no_value: dict[str, str] | None = None
                 ) -> list[Field]:
    """sacct's -o list, `Name[%width],...`: a name in any case, or its first letters (sacct takes `jobn` for
    JobName: the first field in `columns`' order that starts so), with `%30` (right-justified) or `%-30`. A name of
    `no_value` (sacct's, in any case; not its first letters) is refused with why it has no value here."""
    fields = []
    for token in text.split(","):
        token = token.strip()
        if not token:
            continue
        name, percent, width = token.partition("%")
        kept = next((n for n in no_value or () if n.lower() == name.strip().lower()), None)
        if kept is not None:
            fail("vipu", f"{flag}: {kept} has no value here: {no_value[kept]}; leave it out (vipu history -e lists"
                 " the fields)", BAD_INPUT)
        if percent and not re.fullmatch(r"-?[0-9]+", width):
            fail("vipu", f"{flag}: {token!r} has a width that is not a number; write e.g. JobName%30, or %-30 to"
                 " left-justify", BAD_INPUT)
        lower = name.lower()
        match = next((n for n in columns if n.lower() == lower), None) or next(
            (n for n in columns if lower and n.lower().startswith(lower)), None)
        if match is None:
            fail("vipu", f"{flag}: {name!r} is not a field; use any of {','.join(columns)} (each may end in %WIDTH)",
                 BAD_INPUT)
        column = columns[match]
        fields.append(Field(match, column, int(width) if percent else column.width))
    if not fields:
        fail("vipu", f"{flag} {text!r} names no field; give e.g. {flag} JobID,JobName,State,ExitCode", BAD_INPUT)
    return fields


def _sacct_cell(text: str, width: int) -> str:
    size = abs(width) or 1
    if len(text) > size:
        text = text[:size - 1] + "+"
    return (text.rjust(size) if width > 0 else text.ljust(size)) + " "


def sacct_render(fields: list[Field], rows: Sequence, header: bool = True, parsable: str = "",
                 delimiter: str = "|") -> list[str]:
    """sacct's lines: fixed widths with a line of dashes under the header, or with `parsable` "-p" (a delimiter
    after every field) or "-P" (between fields only)."""
    values = [[f.column.value(row) for f in fields] for row in rows]
    if parsable:
        end = delimiter if parsable == "-p" else ""
        lines = [[f.name for f in fields]] if header else []
        return [delimiter.join(v) + end for v in lines + values]
    lines = []
    if header:
        lines.append("".join(fit(f.name[:abs(f.width)], abs(f.width), f.width > 0) + " " for f in fields))
        lines.append("".join("-" * abs(f.width) + " " for f in fields))
    return lines + ["".join(_sacct_cell(v, f.width) for v, f in zip(row, fields)) for row in values]
