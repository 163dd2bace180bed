"""Reading YAML spec files into plain mappings, with errors that name the file and the line.

The loader is PyYAML's safe loader (no Python tags) made strict for hostile files: a key given
twice is an error (YAML would silently keep the last), aliases may repeat at most
``ALIAS_BUDGET`` values in all (a "billion laughs" file is refused before it is expanded), and
nesting deeper than ``MAX_DEPTH`` is refused (no RecursionError).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, SequenceNode

from ..errors import SpecError, short
from .inputs import read_text, refuse_surrogates

#: Values that aliases (``*name``) may repeat in one file, counted with everything inside them.
ALIAS_BUDGET = 10_000
#: Deepest nesting of mappings and lists.
MAX_DEPTH = 64
#: The largest YAML file read: spec files are a few kB (pure-Python parsing runs at ~1 MB/s).
MAX_YAML_BYTES = 4 * 2**20
MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing duplicate keys, alias bombs and deep nesting."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliased = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None:
                self._aliased += self._sizes.get(id(node), 1)
                if self._aliased > ALIAS_BUDGET:
                    raise ComposerError(
                        None,
                        None,
                        f"aliases repeat more than {ALIAS_BUDGET} values (an alias bomb?)",
                        event.start_mark,
                    )
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
            )
        node = super().compose_node(parent, index)
        self._depth -= 1
        self._sizes[id(node)] = 1 + sum(self._sizes.get(id(child), 1) for child in _children(node))
        return node

    def construct_mapping(self, node, deep=False):
        _refuse_duplicates(self, node, deep)
        return super().construct_mapping(node, deep)


def _refuse_duplicates(loader, node, deep: bool) -> None:
    """A mapping's key given twice is an error (YAML would silently keep the last)."""
    if isinstance(node, MappingNode):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = loader.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if duplicate:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found the key {short(key)} twice",
                    key_node.start_mark,
                )
            seen.add(key)


#: Bounds under which a text is parsed by libyaml (``_plain``): the columns of a line's
#: indentation and block indicators, and the brackets of flow collections in the whole text,
#: or the depth of each line's where every one closes on its line (``_shallow_flows``).
PLAIN_INDENT = 20
PLAIN_BRACKETS = 12
_INDENT_CHARS = " -?:"
_BRACKETS = re.compile(r"[^\[\]{}]+")  # everything but flow brackets
_FLOW_BRACKET = re.compile(r"[\[\]{}]")

if getattr(yaml, "CSafeLoader", None) is not None:

    class CStrictLoader(yaml.CSafeLoader):
        """libyaml's safe loader refusing duplicate keys (``StrictLoader``'s check), for
        texts that cannot hold an alias bomb or deep nesting (``_plain``)."""

        def construct_mapping(self, node, deep=False):
            _refuse_duplicates(self, node, deep)
            return super().construct_mapping(node, deep)

    FAST_LOADER: type | None = CStrictLoader
else:  # pragma: no cover - PyYAML built without libyaml
    FAST_LOADER = None


def _plain(text: str) -> bool:
    """Whether ``text`` is within what ``StrictLoader`` accepts without counting: no anchor
    (so no alias can repeat anything), no tab, no byte-order mark (the reader drops a file's
    first; libyaml skips one at any line's start, so the line's prefix would not be its nesting) and
    no ``?`` beside a flow bracket (libyaml reads ``[a?b]``, PyYAML refuses it): where the two
    parsers' rules differ; and nesting provably shallower than ``MAX_DEPTH``. A
    block collection starts at the column of its line's indentation and indicators (``- ``,
    ``? ``, ``: ``), and a nested one starts further right, or at the same column only as a
    sequence that is a mapping's value, whose own entries then start two columns further:
    block nesting is at most ``2 * (PLAIN_INDENT + 1)``; flow nesting at most
    ``PLAIN_BRACKETS`` (``_shallow_flows``); one more for the innermost scalar (55 < 64)."""
    if "&" in text or "\t" in text or "\ufeff" in text:
        return False
    if "?" in text and _FLOW_BRACKET.search(text):
        return False
    if text.count("[") + text.count("{") > PLAIN_BRACKETS and not _shallow_flows(text):
        return False
    return all(
        len(line) - len(line.lstrip(_INDENT_CHARS)) <= PLAIN_INDENT for line in text.splitlines()
    )


def _shallow_flows(text: str) -> bool:
    """Whether every flow collection of ``text`` closes on the line it opens, at most
    ``PLAIN_BRACKETS`` deep (a table's rows, ``- [1, 2, 3]``). Each line holding a bracket
    holds no quote, no comment and no tag (a verbatim tag, ``!<]>``, may hold brackets even in
    a flow collection), and its brackets, read in order, never close more than they opened and
    end closed: a bracket of a block scalar or key can then only add depth, and one after a
    flow collection's opening on its line is that collection's, so none can hide an opening
    left open or carried to a later line."""
    for line in text.splitlines():
        marks = _BRACKETS.sub("", line)
        if not marks:
            continue
        if any(mark in line for mark in "\"'#!"):
            return False
        depth = 0
        for mark in marks:
            depth += 1 if mark in "[{" else -1
            if depth < 0 or depth > PLAIN_BRACKETS:
                return False
        if depth:
            return False
    return True


def _children(node):
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return ()


def parse_yaml(text: str, source: str):
    """Parse YAML text with the strict loader; errors name ``source`` and the line. A text
    within ``_plain``'s bounds is parsed by libyaml with the same duplicate-key check (ten
    times faster: a frontier reads four spec files); any error it finds is reported by the strict
    loader, so every message is the strict loader's. A value its tag cannot hold (a date
    2025-13-45, an integer of 5,000 digits) and a lone surrogate escape are refused too."""
    return refuse_surrogates(_parsed(text, source), text, source)


def _parsed(text: str, source: str):
    """The value of YAML ``text`` (libyaml's where ``_plain``, else the strict loader's)."""
    if FAST_LOADER is not None and _plain(text):
        try:  # libyaml: ten times faster; the same values (tests/test_input_boundary.py)
            return yaml.load(text, Loader=FAST_LOADER)  # noqa: S506 - a CSafeLoader subclass
        except (yaml.YAMLError, ValueError, OverflowError, UnicodeEncodeError):
            pass  # the strict loader reports it, with its own message and line
    kind = _kind(source)
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        raise SpecError(source, "", f"not valid {kind} at line {line}: {exc.reason}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(source, "", f"not valid {kind}{line}: {str(problem)[:160]}") from None
    except RecursionError:  # the parser itself (flow collections) before MAX_DEPTH is reached
        raise SpecError(
            source, "", f"not valid {kind}: nested deeper than {MAX_DEPTH} levels"
        ) from None
    except (ValueError, OverflowError) as exc:  # a scalar its tag cannot hold: 2025-13-45
        raise SpecError(
            source,
            "",
            f"not valid {kind}: a value its type cannot hold ({str(exc).split(';')[0][:120]})",
            "quote it to keep it as text, or write a valid value",
        ) from None


def _kind(source: str) -> str:
    """What a file's parse error calls it: a ``.json`` file is read by the YAML parser (JSON is
    YAML), and its user should not be told it wrote bad YAML."""
    return "JSON (read as YAML)" if str(source).lower().endswith(".json") else "YAML"


def load_yaml(path: Path) -> dict:
    """Parse a YAML file (UTF-8, a regular file) into a mapping; errors name the file and line."""
    data = parse_yaml(read_text(path, MAX_YAML_BYTES), str(path))
    if data is None:
        raise SpecError(
            str(path),
            "",
            "has no fields (the file is empty or only comments)",
            "write its fields as YAML, one 'field: value' a line",
        )
    if not isinstance(data, dict):
        raise SpecError(
            str(path), "", f"expected a mapping of fields at the top level, got {short(data)}",
            "write its fields as 'field: value' lines, a list under the field that holds it",
        )  # fmt: skip
    return data
