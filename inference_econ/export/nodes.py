"""Where an export's processes run: every copy of every worker placed on the servers ("nodes")
of the plan's GPU, and the launch script that starts each node's share of them.

A copy of at most a node's GPUs takes GPUs no other copy of its node has; a larger copy takes
whole nodes of its own (the engines' multi-node launches want the same GPUs on each). A plan
on one node writes one script of its processes with ``localhost`` for host names; a plan on
several writes one script that every node runs, told its place by ``NODE_RANK`` and every
node's address by ``NODE_ADDRS``, so a router reaches a copy on another node by that address.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from ..errors import one_line

#: A node's address in an argument or a file of a plan on several nodes, filled in by the
#: launch script from ``NODE_ADDRS`` (node 0's ``${NODE0}``): written between two unit
#: separators, a control character no name the tool takes may hold, so no text a user gave
#: (a checkpoint of ``${NODE0}``) is ever read as an address.
_MARK = "\x1f"
_ADDRESS = re.compile(_MARK + r"NODE(\d+)" + _MARK)


@dataclass(frozen=True)
class Place:
    """Where one copy of a worker runs: its first node, how many whole nodes it takes, the
    GPUs it uses on each (a copy over several nodes uses as many on each), and its GPU ids on
    its node (None: GPUs from 0 on each of its nodes)."""

    node: int
    nodes: int = 1
    gpus_per_node: int = 0
    ids: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Command:
    """One process to start: its role, how many copies, the argument vector, the files it
    reads (name -> text), its environment, the node it runs on and whether the script waits
    for it to return before the next (a daemon's start, such as ``ray start --head``)."""

    role: str
    count: int
    argv: tuple[str, ...]
    files: dict = field(default_factory=dict)
    #: Environment the process starts with (the GPUs a copy sees), as (name, value) pairs.
    env: tuple[tuple[str, str], ...] = ()
    node: int = 0
    foreground: bool = False

    def shell(self) -> str:
        words = [f"{k}={_word(v)}" for k, v in self.env]
        return " ".join(words + [_word(a) for a in self.argv])


def _word(text: str) -> str:
    """One shell word: quoted as it is, with each node address in it left for the shell to
    fill in (``http://"${NODE1}":8002``)."""
    parts = _ADDRESS.split(text)  # text, node, text, node, ..., text
    if len(parts) == 1:
        return shlex.quote(text)
    return "".join(
        f'"${{NODE{part}}}"' if i % 2 else shlex.quote(part)
        for i, part in enumerate(parts)
        if i % 2 or part
    )


def shown(text: str) -> str:
    """``text`` with each node address as the launch script names it (``${NODE1}``)."""
    return _ADDRESS.sub(lambda m: f"${{NODE{m[1]}}}", text)


def marked(text: str) -> str:
    """``text`` of the tool's own making with each ``${NODE1}`` marked as a node's address
    (``shown``'s inverse; never applied to a user's text)."""
    return re.sub(r"\$\{NODE(\d+)\}", lambda m: f"{_MARK}NODE{m[1]}{_MARK}", text)


def names_a_node(text: str) -> bool:
    """Whether ``text`` holds a node's address for the launch script to fill in."""
    return bool(_ADDRESS.search(text))


def places(workers, gpu, fronted: bool, fits=lambda w, g: True) -> dict[str, list[Place]]:
    """Every copy of every worker, in order, placed on nodes of ``gpu``: copies of at most a
    node's GPUs packed in turn, each on GPUs of its own; a larger copy on whole nodes of its
    own, the fewest over which its GPUs split evenly (12 on 8-GPU nodes: 6 on each of two), as
    the engines' multi-node launches want, and whose ``g`` GPUs a node the engine starts the
    copy on (``fits(worker, g)``: vLLM keeps a data-parallel rank on one node, SGLang a
    pipeline stage's GPUs on whole nodes or whole stages on one) where such a count is.
    A lone server of one node sees every GPU."""
    per = gpu.gpus_per_host
    out: dict[str, list[Place]] = {}
    node, used = 0, 0
    for w in workers:
        out[w.role] = []
        for _ in range(w.count):
            if w.gpus > per:
                even = [n for n in range(-(-w.gpus // per), w.gpus + 1) if w.gpus % n == 0]
                whole = [n for n in even if fits(w, w.gpus // n)]
                span = (whole or even)[0]
                node += 1 if used else 0
                out[w.role].append(Place(node, span, w.gpus // span))
                node, used = node + span, 0
                continue
            if used + w.gpus > per:
                node, used = node + 1, 0
            ids = tuple(range(used, used + w.gpus)) if fronted else None
            out[w.role].append(Place(node, 1, w.gpus, ids))
            used += w.gpus
    return out


def node_count(placed: dict[str, list[Place]]) -> int:
    """Nodes the placed copies take."""
    return max(p.node + p.nodes for ps in placed.values() for p in ps)


def address(node: int, nodes: int) -> str:
    """How a command names ``node``: ``localhost`` on a plan of one node, else the address the
    launch script reads for it (``${NODE1}`` in the script; ``shown``)."""
    return "localhost" if nodes == 1 else f"{_MARK}NODE{node}{_MARK}"


def _heredoc(name: str, text: str) -> list[str]:
    """Lines that write ``text`` to ``name`` with the node addresses filled in (everything else
    as it is: the here-document's ``\\``, ``$`` and backquotes escaped)."""
    body = "".join(
        f"${{NODE{part}}}"
        if i % 2
        else part.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")
        for i, part in enumerate(_ADDRESS.split(text))
    )
    lines = body.rstrip("\n").split("\n")
    end = "EOF"
    while end in lines:
        end += "_"
    return [f"cat > {shlex.quote(name)} <<{end}", *lines, end]


def _lines(c: Command, indent: str = "") -> list[str]:
    copies = f" (x{c.count})" if c.count > 1 else ""
    tail = "" if c.foreground else " &"
    return ["", f"{indent}# {one_line(c.role)}{copies}", indent + c.shell() + tail]


def script(
    header: list[str], commands: list[Command], nodes: int, per_node: int, front_port: int
) -> str:
    """The launch script: the header as comments, then every process (one node), or each
    node's processes under ``case "$NODE_RANK"`` (several), after reading ``NODE_ADDRS``; the
    front listens on node 0's ``front_port``."""
    # one_line: a comment ends at a line break, and whatever followed one would run
    lines = ["#!/bin/sh", *[f"# {one_line(h)}" for h in header]]
    if nodes == 1:
        for c in commands:
            lines += _lines(c)
        return "\n".join([*lines, "", "wait", ""])
    last = nodes - 1
    lines += [
        f"# {nodes} nodes of {per_node} GPUs: run this script on every one of them, with",
        f"# NODE_RANK its number (0 to {last}) and NODE_ADDRS the nodes' addresses, node 0 first:",
        "#   NODE_RANK=0 NODE_ADDRS='10.0.0.1 10.0.0.2"
        + (" ..." if nodes > 2 else "")
        + "' sh launch.sh",
        f"# Start node 0 first (the others meet at its address); it runs the front, port "
        f"{front_port}:",
        "# send the benchmark there.",
        'if [ -z "${NODE_RANK-}" ] || [ -z "${NODE_ADDRS-}" ]; then',
        f'  echo "launch.sh: set NODE_RANK (0 to {last}) and NODE_ADDRS ({nodes} addresses, node 0 first)" >&2',
        "  exit 2",
        "fi",
        "set -f  # the addresses are words, never file patterns",
        "set -- $NODE_ADDRS",
        f'if [ "$#" -ne {nodes} ]; then',
        f'  echo "launch.sh: NODE_ADDRS: give {nodes} addresses, node 0 first (got $#)" >&2',
        "  exit 2",
        "fi",
        *[f"NODE{k}=${{{k + 1}}}" for k in range(nodes)],
        'case "$NODE_RANK" in',
    ]
    for k in range(nodes):
        mine = [c for c in commands if c.node == k]
        lines.append(f"{k})")
        if not mine:
            lines.append("  : # this node's GPUs are driven by a launcher on an earlier node")
        for c in mine:
            for name, text in c.files.items():
                if names_a_node(text):  # a here-document's lines keep their own indent
                    lines += _heredoc(name, text)
            lines += _lines(c, "  ")
        lines.append("  ;;")
    lines += [
        "*)",
        f'  echo "launch.sh: NODE_RANK: a number from 0 to {last}, got $NODE_RANK" >&2',
        "  exit 2",
        "  ;;",
        "esac",
        "",
        "wait",
        "",
    ]
    return "\n".join(lines)
