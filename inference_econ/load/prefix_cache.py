"""The prefix cache of one engine instance (docs/model.md §E9).

Prompts are sequences of *segments*: a shared system prompt, the turns of a conversation so far
(each user message and each answer), the new message. The cache is a tree of segments (a
radix tree whose edges are whole segments, as SGLang's RadixAttention keeps token runs and
vLLM's automatic prefix caching keeps chains of block hashes): a request whose prompt starts
with a chain of cached segments reuses their KV cache and prefills only the rest, counted in
whole blocks of ``BLOCK_TOKENS`` tokens (vLLM caches full blocks only) and never the prompt's
last token (its logits are needed).

Memory: a segment a running request holds is part of that request's cache; if several running
requests hold it, it is stored once (``shared`` counts the copies not stored). A segment no
running request holds stays cached in the memory the running requests leave, and is evicted,
least recently used first and leaves before their parents, when they need it (vLLM evicts its
free blocks in LRU order; SGLang evicts radix-tree leaves by LRU).

With tiers below the GPU (``kv_tiers.TierSpace``, §E13: host memory, then local disk) an evicted
segment moves to the first tier instead of leaving the tree; a full tier moves its own least
recently used leaves to the next, and the last drops them. A prompt that starts with a segment
in a tier counts it as a hit, takes it back into GPU memory, and the seconds to load it
(``pending_s``) are charged to the next step with prompt tokens (``charged``). Without tiers
nothing here changes.
"""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .kv_tiers import TierSpace

#: Tokens per KV block: a hit counts whole blocks (vLLM's default block_size of 16 tokens).
BLOCK_TOKENS = 16


def skipped_tokens(matched, prompt_tokens):
    """Of a prompt of ``prompt_tokens`` tokens whose first ``matched`` are cached, the tokens
    the engine skips: whole blocks, never the prompt's last token."""
    usable = min(matched, prompt_tokens - 1)
    return max(0, usable - usable % BLOCK_TOKENS)


class Node:
    """One cached segment: its key, where it starts in the prompt, its tokens and the KV
    layer-positions it holds; how many running requests hold it, when it was last used, and
    where its KV cache is (``level``: 0 in GPU memory, k in the k-th tier below it)."""

    __slots__ = (
        "key", "parent", "children", "start", "tokens", "positions", "pins", "last", "level",
    )  # fmt: skip

    def __init__(self, key, parent, start: int, tokens: int, positions: float) -> None:
        self.key, self.parent = key, parent
        self.children: dict[tuple, Node] = {}
        self.start, self.tokens, self.positions = start, tokens, positions
        self.pins, self.last = 0, 0.0
        self.level = 0


def _leaf_at(n: Node, level: int) -> bool:
    """No child of ``n`` is at ``level`` or nearer the GPU: ``n`` may leave that level (a
    segment's children are never nearer the GPU than it is)."""
    return not any(c.level <= level for c in n.children.values())


class PrefixCache:
    """The tree of cached segments of one instance and its memory (module docstring).

    ``positions(start, end)`` gives the KV layer-positions of the tokens ``start`` to ``end``
    of a prompt (the engine's own rule, sliding windows included); ``tiers`` the tiers below
    the GPU, nearest first (``kv_tiers.TierSpace``; none: evicted segments leave the tree)."""

    def __init__(self, positions, tiers: tuple[TierSpace, ...] = ()) -> None:
        self.positions = positions
        self.root = Node(None, None, 0, 0, 0.0)
        #: Layer-positions of the segments no running request holds (evictable).
        self.cached = 0.0
        #: Layer-positions held by more than one running request, beyond the first copy.
        self.shared = 0.0
        self._heap: list = []
        self._order = itertools.count()
        #: The tiers below the GPU, the layer-positions each holds, their least recently used
        #: leaves, and the seconds of loads not yet charged to a step.
        self.tiers = tuple(tiers)
        self.tier_held = [0.0] * len(self.tiers)
        self._tier_heaps: list[list] = [[] for _ in self.tiers]
        self.pending_s = 0.0
        self.overlap = all(t.overlap for t in self.tiers)

    # --- looking up -----------------------------------------------------------------------
    def lookup(self, segments) -> list[Node]:
        """The cached nodes the prompt's segments start with, root first."""
        node, out = self.root, []
        for key, _ in segments:
            child = node.children.get(key)
            if child is None:
                break
            out.append(child)
            node = child
        return out

    @staticmethod
    def hit_tokens(nodes: list[Node], prompt_tokens: int) -> int:
        """Prompt tokens a request skips: the matched segments in whole blocks, at most all
        but the prompt's last token (``skipped_tokens``)."""
        if not nodes:
            return 0
        return int(skipped_tokens(nodes[-1].start + nodes[-1].tokens, int(prompt_tokens)))

    def tier_tokens(self, nodes: list[Node], hit: int) -> list[int]:
        """Of ``hit`` prompt tokens a request skips, those whose segments are in each tier."""
        out = [0] * len(self.tiers)
        for n in nodes:
            if n.level:
                out[n.level - 1] += max(0, min(n.start + n.tokens, hit) - n.start)
        return out

    @staticmethod
    def held_by_others(nodes: list[Node]) -> float:
        """Layer-positions of these nodes already held by running requests (stored once)."""
        return sum(n.positions for n in nodes if n.pins)

    # --- holding and releasing ------------------------------------------------------------
    def pin(self, nodes, t: float, load: bool = True) -> None:
        """A running request holds these nodes; those in a tier come back to the GPU, their
        loading charged to the next prompt step (``load``; not for a segment the request has
        just computed itself)."""
        for n in nodes:
            if n.pins:
                self.shared += n.positions
            elif n.level:
                self._to_gpu(n, load)
            else:
                self.cached -= n.positions
            n.pins += 1
            n.last = t

    def _to_gpu(self, n: Node, load: bool) -> None:
        k = n.level - 1
        n.level = 0
        self.tier_held[k] -= n.positions
        if load:
            self.pending_s += n.positions * self.tiers[k].seconds_per_position

    def charged(self, step_s: float) -> float:
        """A prompt step of ``step_s`` seconds with the loads pending before it: the longer of
        the two where loading overlaps the step, else their sum; the loads are then done."""
        load, self.pending_s = self.pending_s, 0.0
        if self.overlap:
            return step_s if step_s > load else load
        return step_s + load

    def insert(self, segments, parent: Node | None, t: float) -> list[Node]:
        """Nodes for ``segments`` under ``parent`` (default the root), held by the request
        that computed them (a node another request inserted meanwhile is held as a hit)."""
        node = parent or self.root
        out = []
        positions, children = self.positions, node.children
        for key, tokens in segments:
            child = children.get(key) if children else None  # a new node has no children
            if child is None:
                start = node.start + node.tokens
                child = Node(key, node, start, int(tokens), positions(start, start + tokens))
                children[key] = child
                child.pins, child.last = 1, t
            else:
                self.pin((child,), t, load=False)  # computed by this request: nothing to load
            out.append(child)
            node, children = child, child.children
        return out

    def release(self, nodes, t: float) -> None:
        """A request stops holding these nodes (it finished or was preempted): those no
        running request holds any more stay cached, evictable."""
        for n in nodes:
            n.pins -= 1
            n.last = max(n.last, t)
            if n.pins:
                self.shared -= n.positions
            else:
                self.cached += n.positions
                if not (_leaf_at(n, 0) if self.tiers else not n.children):
                    continue
                heapq.heappush(self._heap, (n.last, next(self._order), n))

    def evict(self, excess: float) -> float:
        """Evict least recently used leaves no running request holds until ``excess``
        layer-positions are free (or nothing is left to evict); returns what was freed. With
        tiers an evicted segment moves to the first of them instead of leaving the tree."""
        freed = 0.0
        heap = self._heap
        tiered = bool(self.tiers)
        while freed < excess and heap:
            last, _, n = heapq.heappop(heap)
            if n.pins or n.level or n.parent is None or last != n.last:
                continue  # held again, moved, evicted or used since
            if not (_leaf_at(n, 0) if tiered else not n.children):
                continue  # no longer a leaf
            p = n.parent
            if tiered:
                self._demote(n, 1)
            else:
                del p.children[n.key]
                n.parent = None
            freed += n.positions
            self.cached -= n.positions
            if p.parent is None or p.pins or p.level:
                continue
            if _leaf_at(p, 0) if tiered else not p.children:
                heapq.heappush(heap, (p.last, next(self._order), p))
        return freed

    def _demote(self, n: Node, level: int) -> None:
        """Move a segment to tier ``level`` (from 1), and make room there: its least recently
        used leaves move to the next tier, or leave the tree from the last."""
        k = level - 1
        n.level = level
        self.tier_held[k] += n.positions
        heap = self._tier_heaps[k]
        if _leaf_at(n, level):
            heapq.heappush(heap, (n.last, next(self._order), n))
        room = self.tiers[k].room
        while self.tier_held[k] > room and heap:
            last, _, m = heapq.heappop(heap)
            if m.level != level or m.parent is None or last != m.last or not _leaf_at(m, level):
                continue  # moved, dropped, used since or no longer a leaf there
            self.tier_held[k] -= m.positions
            p = m.parent
            if level < len(self.tiers):
                self._demote(m, level + 1)
            else:
                del p.children[m.key]
                m.parent = None
            if p.level == level and p.parent is not None and _leaf_at(p, level):
                heapq.heappush(heap, (p.last, next(self._order), p))


def che_check(popularity, size: int, room: int, requests: int, warm: int, seed: int = 0):
    """(simulated, Che) hit ratio of this cache under independent requests for prefixes of
    ``size`` tokens with the given ``popularity`` and room for ``room`` of them (docs/model.md
    §E9): the cache replayed over ``requests`` draws (hits counted after ``warm``), and Che's
    approximation for LRU (Che, Tung and Wang 2002): ``Σ_i (1 − e^(−p_i·T)) = room``, hit
    ratio ``Σ_i p_i (1 − e^(−p_i·T))``."""
    import numpy as np
    from scipy.optimize import brentq

    p = np.asarray(popularity, dtype=float) / np.sum(popularity)
    rng = np.random.default_rng(seed)
    cache = PrefixCache(lambda a, b: float(b - a))
    hits = 0
    for t, k in enumerate(rng.choice(len(p), requests, p=p)):
        segment = ((("p", int(k)), size),)
        nodes = cache.lookup(segment)
        if nodes:
            hits += t >= warm
            cache.pin(nodes, t)
        else:
            nodes = cache.insert(segment, None, t)
        cache.release(nodes, t)
        cache.evict(cache.cached - room * size)
    T = brentq(lambda x: np.sum(1.0 - np.exp(-p * x)) - room, 0.0, 1e12)
    return hits / (requests - warm), float(np.sum(p * (1.0 - np.exp(-p * T))))
