"""Scaling policies (docs/model-part-e.md §E14): each is evaluated every ``interval_s`` with what
the pool saw over the last interval (``Observation``) and answers the instances it wants. The
pool (``load/scaled_pool.py``) applies the answer: scale-ups at once, scale-downs held back by a
stabilisation window, instances paid from when they are asked for.

* ``TargetUtilisation`` — Kubernetes' Horizontal Pod Autoscaler on a utilisation metric: the
  load over the load the instances hold (the knee, §E6), ``ceil(rate / (target · per))``
  instances, left alone while the ratio to the target is within the tolerance (0.1 by default,
  kube-controller-manager's ``--horizontal-pod-autoscaler-tolerance``); synced every 15 s.
* ``OutstandingRequests`` — KEDA on the requests outstanding (running, queued and waiting for
  capacity), ``ceil(outstanding / target)`` with the target a share of what one instance holds
  at its knee (``per ·`` the mean time in the system there, Little's law); polled every 30 s
  (KEDA's default ``pollingInterval``).
* ``SloHeadroom`` — NVIDIA Dynamo's planner: the load predicted ``lead_s`` ahead (a line
  through the last intervals' rates) over the load one instance holds within the latency
  targets, less a headroom share; evaluated every 60 s (an assumption: Dynamo's
  ``adjustment_interval`` is set by its user).
* ``Scheduled`` — the hourly plan of ``capacity --demand`` (§G5): each hour's instances, those
  added asked for ``lead_s`` before the hour, those let go at its start.

Every policy's wish depends only on the arrivals and the instances it has asked for, except
``OutstandingRequests``, which also sees the requests waiting for capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..columns import SECONDS_PER_HOUR
from ..errors import SpecError
from ..settings.load import AUTOSCALERS


@dataclass(frozen=True)
class Observation:
    """What a policy sees at an evaluation: time, the arrival rate of the last interval and of
    the intervals before it, the instances (ready, and asked for in all), and the requests
    outstanding (running by Little's law, plus those waiting for capacity)."""

    time_s: float
    rate_per_s: float
    recent_rates: tuple[float, ...]
    ready: int
    asked: int
    backlog: float
    per_instance: float
    time_in_system_s: float

    @property
    def outstanding(self) -> float:
        served = min(self.rate_per_s, self.ready * self.per_instance)
        return served * self.time_in_system_s + self.backlog


class Policy(Protocol):
    """What the pool asks of a policy: its name, its searched knob and value, how often it is
    evaluated, and the instances it wants given an observation."""

    @property
    def name(self) -> str: ...

    @property
    def knob(self) -> str: ...

    @property
    def target(self) -> float: ...

    @property
    def interval_s(self) -> float: ...

    def desired(self, obs: Observation) -> int: ...

    def describe(self) -> str: ...


def _ceil(x: float) -> int:
    """``ceil`` that forgives rounding error (9.000000001 instances is 9)."""
    return max(0, math.ceil(x - 1e-9))


@dataclass(frozen=True)
class TargetUtilisation:
    """Kubernetes HPA on utilisation: the load over the load the instances hold."""

    target: float = 0.8
    tolerance: float = 0.1
    interval_s: float = 15.0
    name: str = "hpa"
    knob: str = "target"

    def desired(self, obs: Observation) -> int:
        wanted = obs.rate_per_s / (self.target * obs.per_instance)
        if obs.asked > 0 and abs(wanted / obs.asked - 1.0) <= self.tolerance:
            return obs.asked
        return _ceil(wanted)

    def describe(self) -> str:
        return f"target utilisation {self.target:g} of the held load (HPA, tolerance {self.tolerance:g})"


@dataclass(frozen=True)
class OutstandingRequests:
    """KEDA on outstanding requests per instance, the target a share of an instance's at its
    knee."""

    target: float = 0.8
    interval_s: float = 30.0
    name: str = "keda"
    knob: str = "target"

    def desired(self, obs: Observation) -> int:
        per_instance = self.target * obs.per_instance * obs.time_in_system_s
        return _ceil(obs.outstanding / per_instance)

    def describe(self) -> str:
        return f"outstanding requests {self.target:g} of an instance's at its knee (KEDA)"


@dataclass(frozen=True)
class SloHeadroom:
    """Dynamo's planner: the load predicted ``lead_s`` ahead over the in-target load one instance
    holds, keeping ``target`` of it spare (headroom)."""

    target: float = 0.2
    lead_s: float = 0.0
    history: int = 4
    interval_s: float = 60.0
    name: str = "planner"
    knob: str = "headroom"

    def predicted(self, obs: Observation) -> float:
        """A least-squares line through the last ``history`` interval rates, ``lead_s`` past
        the last one's middle (a constant while fewer than two are known); never below 0."""
        rates = np.asarray(obs.recent_rates[-self.history :], dtype=float)
        if len(rates) < 2:
            return obs.rate_per_s
        t = np.arange(len(rates), dtype=float) * self.interval_s
        slope, level = np.polyfit(t, rates, 1)
        return max(0.0, float(level + slope * (t[-1] + self.lead_s)))

    def desired(self, obs: Observation) -> int:
        return _ceil(self.predicted(obs) / ((1.0 - self.target) * obs.per_instance))

    def describe(self) -> str:
        """The policy in words, with the span its line is fitted over: a forecast far beyond
        it (a long start-up) carries the noise of a few intervals' rates that far."""
        span = self.history * self.interval_s
        return (
            f"SLO headroom {self.target:g} on the load predicted {self.lead_s:.0f} s ahead by a "
            f"line through the last {span:.0f} s of rates (Dynamo planner)"
        )


@dataclass(frozen=True)
class Scheduled:
    """The hourly plan: ``needed[h]`` instances through hour ``h``, asked for ``lead_s`` early."""

    needed: tuple[int, ...]
    lead_s: float = 0.0
    interval_s: float = 15.0
    name: str = "hourly plan"
    knob: str = ""
    target: float = math.nan

    def desired(self, obs: Observation) -> int:
        """The next hour's instances from ``lead_s`` before it, while the hour's own last."""
        last = len(self.needed) - 1
        now = min(int(obs.time_s // SECONDS_PER_HOUR), last)
        ahead = min(int((obs.time_s + self.lead_s) // SECONDS_PER_HOUR), last)
        return int(max(self.needed[now], self.needed[ahead]))

    def describe(self) -> str:
        return f"the hourly plan, each hour's instances asked for {self.lead_s:.0f} s early"


#: Policies by the name ``--autoscale`` takes.
POLICIES = dict(zip(AUTOSCALERS, (TargetUtilisation, OutstandingRequests, SloHeadroom)))
#: Each policy's searched knob: utilisation and outstanding shares, the planner's headroom.
SEARCH_GRID = {
    "hpa": (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95),
    "keda": (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95),
    "planner": (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5),
}


def make_policy(name: str, target: float | None = None, lead_s: float = 0.0) -> Policy:
    """The policy called ``name`` (``POLICIES``) at its knob ``target`` (None: its default);
    the planner predicts ``lead_s`` ahead."""
    if name not in POLICIES:
        raise SpecError(
            "argument",
            "autoscale",
            f"unknown policy {name!r}",
            f"give one of {', '.join(POLICIES)}",
        )
    kwargs: dict = {} if target is None else {"target": float(target)}
    if name == "planner":
        kwargs["lead_s"] = float(lead_s)
    policy = POLICIES[name](**kwargs)
    share = policy.target
    if not (0 <= share < 1 if name == "planner" else 0 < share <= 1):
        span = "[0, 1)" if name == "planner" else "(0, 1]"
        raise SpecError(
            "argument", f"{name} {policy.knob}", f"is {share:g}", f"give a share in {span}"
        )
    return policy
