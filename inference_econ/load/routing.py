"""How a deployment's load balancer sends requests to its instances (docs/model.md §E10).

* ``random``: each request to an instance drawn at random (every instance then sees a thinned
  stream, and one instance simulated alone stands for all: §E2's shortcut);
* ``round_robin``: instances in turn;
* ``least_outstanding``: the instance with the fewest requests routed to it and not finished
  (waiting, prefilling or decoding; ties at random) — join-the-shortest-queue;
* ``prefix_aware``: consistent hashing with bounded loads (Mirrokni, Thorup and
  Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018) on the request's session,
  else its shared prefix: the instance the key hashes to on a ring of virtual nodes, or the
  next one clockwise whose outstanding requests stay within ``LOAD_BOUND`` times the mean, so
  a session's turns and a prefix's requests meet their cached prefix while no instance is
  overloaded (the idea of SGLang's cache-aware router and llm-d's prefix-aware scorer);
  requests with neither go to the least-loaded instance.

Every router but ``random`` (and any router once a session's later turns depend on when its
earlier ones finish) needs the instances simulated together: a group of up to ``GROUP``
instances serving their share of the load (whole sessions), the others seeing the same.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SpecError
from ..specs.engine import ROUTERS, RouterPolicy

#: Most instances simulated together; a larger deployment is simulated as groups of this many
#: serving their share of the load (join-the-shortest-queue gains little beyond a few queues).
GROUP = 8
#: Consistent hashing with bounded loads: no instance takes more than this times the mean
#: outstanding requests, rounded up (the paper's 1 + epsilon, here epsilon = 0.25: HAProxy's
#: hash-balance-factor sets the same bound in per cent).
LOAD_BOUND = 1.25
#: Points of each instance on the hash ring.
VIRTUAL_NODES = 64


def check_router(name: str) -> RouterPolicy:
    """``name`` as a router policy, or a SpecError naming the policies."""
    if name not in ROUTERS:
        raise SpecError("argument", "router", f"unknown router {name!r}", ", ".join(ROUTERS))
    return name


def mix64(x: int) -> int:
    """A 64-bit integer hash (splitmix64's finaliser): well spread, the same on every run (the
    ring's points, a session's instance, a warm start's order of histories)."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


class Router:
    """``router(engines, request, time)`` -> the index of the engine the request goes to."""

    def __init__(self, policy: RouterPolicy, instances: int, keys=None, seed: int = 0) -> None:
        self.policy = check_router(policy)
        self.k = int(instances)
        self.keys = keys  # each request's routing key (-1: none), for prefix_aware
        self.rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5EED]))
        self.turn = 0
        points = sorted(
            (mix64(j * 1_000_003 + v), j) for j in range(self.k) for v in range(VIRTUAL_NODES)
        )
        self.ring = np.array([p for p, _ in points], dtype=np.uint64)
        self.owner = [j for _, j in points]

    def _start(self, key: int) -> int:
        """The ring position a routing key hashes to (its first candidate instance's)."""
        return int(np.searchsorted(self.ring, np.uint64(mix64(key)))) % len(self.ring)

    def home(self, i: int) -> int:
        """The engine whose cache a session under way at the start holds request ``i``'s history
        in (``sessions.warm_caches``): the one its key hashes to where requests are routed by
        it (``prefix_aware``), else one drawn evenly, as the engine that served its last turn
        is, of a router that does not follow sessions."""
        key = -1 if self.keys is None else int(self.keys[i])
        if self.policy == "prefix_aware" and key >= 0:
            return self.owner[self._start(key)]
        return int(mix64((key if key >= 0 else i) * 7_919 + 17) % self.k)  # the same at any rate

    def __call__(self, engines, i: int, at: float) -> int:
        p = self.policy
        if p == "random":
            return int(self.rng.integers(self.k))
        if p == "round_robin":
            self.turn = (self.turn + 1) % self.k
            return self.turn
        load = [e.outstanding() for e in engines]
        key = -1 if self.keys is None else int(self.keys[i])
        if p == "least_outstanding" or key < 0:
            low = min(load)
            ties = [j for j, x in enumerate(load) if x == low]
            return ties[int(self.rng.integers(len(ties)))] if len(ties) > 1 else ties[0]
        bound = math.ceil(LOAD_BOUND * (sum(load) + 1) / self.k)
        start = self._start(key)
        for step in range(len(self.ring)):
            j = self.owner[(start + step) % len(self.ring)]
            if load[j] + 1 <= bound:
                return j
        return int(np.argmin(load))
