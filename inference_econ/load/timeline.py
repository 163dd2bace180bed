"""The simulated schedule as a timeline (docs/model.md §E12): every step each engine instance
took, its preemptions, and each request's wait, prefill and decode, in the Trace Event Format
that Perfetto (ui.perfetto.dev) and chrome://tracing open as written.

Recording is off unless a run is inside ``recording()``: an engine then keeps one tuple a
step (``_Engine`` appends to its ``trace`` list) and the run's record is added when it ends
(``Timeline.add_run``). A decode run the scheduler advances in closed form (several steps at
once, §E3) is one event with its step count; a step with prompt tokens is one event. The
events of an instance's steps add up to its busy seconds exactly (``busy_s`` in its metadata),
which is what a test checks.

Trace Event Format (Google's "Trace Event Format" document, the format chrome://tracing and
Perfetto read): a JSON object with ``traceEvents``, each event with ``ph`` (phase), ``ts``
(microseconds), ``pid`` and ``tid``; complete events (``X``) carry ``dur``; async events
(``b``/``e``) pair by ``cat`` and ``id`` and nest; metadata events (``M``) name processes and
threads; instant events (``i``) mark a moment.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

from .records import RunRecord

#: The timeline runs record into while ``recording`` is active (None: recording is off).
RECORDING: ContextVar[Timeline | None] = ContextVar("timeline", default=None)

#: Microseconds a second: the format's timestamps and durations are in microseconds.
US_PER_S = 1e6
#: Thread ids inside an instance's process.
STEPS_TID, PREEMPTIONS_TID = 1, 2
#: The process of the requests' own spans (instances are 1, 2, ...).
REQUESTS_PID = 0


@dataclass
class Lane:
    """One engine instance's steps: ``(kind, start_s, seconds, decoding requests, prompt
    tokens or decode steps, prompt chunks)`` a step ("prompt", and then the seconds of the
    prefixes it loaded from a KV-cache tier) or a closed-form run of decode steps ("decode"),
    and its preemptions ``("preempt", at_s, request)``."""

    label: str
    events: list = field(default_factory=list)
    busy_s: float = 0.0


@dataclass
class Timeline:
    """The steps of every engine instance of the runs recorded, and their requests."""

    lanes: list[Lane] = field(default_factory=list)
    #: (label, record) of each run: its requests' times (sent, admitted, first token, finish).
    runs: list[tuple[str, RunRecord]] = field(default_factory=list)
    #: What the instances drawn stand for, where one is simulated for several ("": each its own).
    stands_for: str = ""

    def add_run(self, engines, record: RunRecord, label: str = "") -> None:
        """Keep what the ``engines`` of one run recorded (their ``trace`` lists) and its
        record; ``label`` names the run (a pool of a disaggregated deployment)."""
        name = label or (f"run {len(self.runs) + 1}" if self.runs else "")
        for k, e in enumerate(engines):
            lane = f"{name}, instance {k + 1}" if name else f"instance {k + 1}"
            self.lanes.append(Lane(lane, list(e.trace or ()), float(e.busy)))
        name = name or "run 1"
        self.runs.append((name, record))

    def name_pools(self, prefill_instances: int, decode_instances: int) -> None:
        """Name a disaggregated run's lanes by pool (the prefill pool's run is the one not
        labelled "decode pool") and say what they stand for: each pool's instances drawn for
        all of its own, on requests drawn apart (§E5)."""
        pre = [ln for ln in self.lanes if not ln.label.startswith("decode pool")]
        for lane in pre:
            lane.label = f"prefill pool, {lane.label.rsplit(', ', 1)[-1]}"
        self.runs = [(n if n == "decode pool" else "prefill pool", r) for n, r in self.runs]
        self.stands_for = (
            f"the prefill pool's {len(pre)} simulated for its {prefill_instances} instances "
            f"and the decode pool's {len(self.lanes) - len(pre)} for its {decode_instances}, "
            "each serving its share alike; the pools serve requests drawn apart, their delays "
            "taken as independent (docs/model.md §E5)"
        )

    def steps(self) -> int:
        """Steps of every instance (a decode run counts its steps)."""
        return sum(
            int(ev[4]) if ev[0] == "decode" else 1
            for ln in self.lanes
            for ev in ln.events
            if ev[0] != "preempt"
        )

    # --- the Trace Event Format ------------------------------------------------------------
    def trace_events(self) -> dict:
        """The timeline as a Trace Event Format object (``json.dumps`` writes the file)."""
        events: list[dict] = [_meta("process_name", REQUESTS_PID, 0, "requests")]
        for pid, lane in enumerate(self.lanes, start=1):
            events += [
                _meta("process_name", pid, 0, lane.label),
                _meta("thread_name", pid, STEPS_TID, "steps"),
                _meta("thread_name", pid, PREEMPTIONS_TID, "preemptions"),
            ]
            alike = f"; {self.stands_for}" if self.stands_for else ""
            events.append(
                {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
                 "args": {"labels": f"busy {lane.busy_s:.6g} s{alike}"}}
            )  # fmt: skip
            events += list(_lane_events(pid, lane))
        first_id = 0
        for name, record in self.runs:
            events += list(_request_events(name, record, first_id))
            first_id += len(record.arrivals)
        return {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {
                "source": "inference-econ simulate --timeline",
                "time_unit": "us",
                **({"instances": self.stands_for} if self.stands_for else {}),
            },  # fmt: skip
        }

    def to_json(self) -> str:
        """The trace file's text."""
        return json.dumps(self.trace_events(), separators=(",", ":"), allow_nan=False)


def _meta(kind: str, pid: int, tid: int, name: str) -> dict:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {"name": name}}


def _us(seconds: float) -> float:
    return round(float(seconds) * US_PER_S, 3)


def _lane_events(pid: int, lane: Lane) -> Iterator[dict]:
    """An instance's steps as complete events and its preemptions as instant events."""
    for ev in lane.events:
        if ev[0] == "preempt":
            yield {
                "ph": "i", "s": "t", "name": "preemption", "cat": "schedule",
                "ts": _us(ev[1]), "pid": pid, "tid": PREEMPTIONS_TID,
                "args": {"request": int(ev[2])},
            }  # fmt: skip
            continue
        kind, start, seconds, decoding, count, chunks = ev[:6]
        if kind == "prompt":
            name = "prefill" if not decoding else "mixed step"
            args = {"decoding_requests": int(decoding), "prompt_tokens": int(count),
                    "prompt_chunks": int(chunks), "seconds": float(seconds)}  # fmt: skip
            if ev[6]:  # prefixes loaded back from a host or disk tier for it (§E13)
                args["tier_load_seconds"] = float(ev[6])
        else:
            name = f"decode x{int(count)}"
            args = {"decoding_requests": int(decoding), "steps": int(count),
                    "seconds": float(seconds)}  # fmt: skip
        yield {
            "ph": "X", "name": name, "cat": "step", "ts": _us(start), "dur": _us(seconds),
            "pid": pid, "tid": STEPS_TID, "args": args,
        }  # fmt: skip


def _request_events(run: str, record: RunRecord, first_id: int) -> Iterator[dict]:
    """Each request of a run as an async span ("request N") holding its phases: queued
    (sent to admitted), prefill (admitted to first token) and decode (first token to the
    last), each present where both its ends are known."""
    a = record.arrivals
    sent, admitted = a.arrival_s, record.admitted_s
    first, finish = record.first_token_s, record.finish_s
    for i in range(len(a)):
        start, end = sent[i], finish[i]
        if not (math.isfinite(start) and math.isfinite(end)):
            continue  # rejected, or not finished when the run stopped
        ident = f"{first_id + i:#x}"
        common = {"cat": "request", "id": ident, "pid": REQUESTS_PID, "tid": 0}
        tokens = {"prompt_tokens": int(a.prompt_tokens[i]),
                  "output_tokens": int(a.output_tokens[i]), "run": run}  # fmt: skip
        yield {"ph": "b", "name": f"request {i}", "ts": _us(start), "args": tokens, **common}
        marks = [start, admitted[i], first[i], end]
        for name, lo, hi in zip(("queued", "prefill", "decode"), marks, marks[1:]):
            if math.isfinite(lo) and math.isfinite(hi) and hi >= lo >= start:
                yield {"ph": "b", "name": name, "ts": _us(lo), **common}
                yield {"ph": "e", "name": name, "ts": _us(hi), **common}
        yield {"ph": "e", "name": f"request {i}", "ts": _us(end), **common}


@contextmanager
def recording() -> Iterator[Timeline]:
    """Record the runs simulated inside the block into a new ``Timeline``."""
    timeline = Timeline()
    token = RECORDING.set(timeline)
    try:
        yield timeline
    finally:
        RECORDING.reset(token)


def busy_by_lane(trace: dict) -> dict[int, float]:
    """Seconds of the step events of each instance's process in a trace (the check that they
    add up to the instance's busy seconds)."""
    total: dict[int, float] = {}
    for ev in trace["traceEvents"]:
        if ev["ph"] == "X" and ev.get("cat") == "step":
            total[ev["pid"]] = total.get(ev["pid"], 0.0) + ev["args"]["seconds"]
    return total


def step_spans(timeline: Timeline) -> list[tuple[str, np.ndarray]]:
    """(label, rows of [start s, seconds, decoding requests, is prompt step]) of each lane,
    for a figure."""
    out = []
    for lane in timeline.lanes:
        rows = [
            (ev[1], ev[2], ev[3], 1.0 if ev[0] == "prompt" else 0.0)
            for ev in lane.events
            if ev[0] != "preempt"
        ]
        out.append((lane.label, np.asarray(rows, dtype=float).reshape(-1, 4)))
    return out
