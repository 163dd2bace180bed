"""The types of the model's numbers (one home): a quantity at one configuration is a float, at
a grid of configurations a numpy array, and the two broadcast together in every formula."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Seconds, bytes, FLOP, degrees or counts: one float, or an array of them (broadcasting).
Floats = float | npt.NDArray[np.floating]
#: A yes/no per configuration: one bool, or a boolean array.
Flags = bool | npt.NDArray[np.bool_]


def _into(owned, other) -> bool:
    """Whether ``owned op other`` can be written into ``owned``: a float array already of the
    result's shape and type (checked without numpy's slower general functions: this runs
    thousands of times a search)."""
    if type(owned) is not np.ndarray:
        return False
    dtype = owned.dtype
    if dtype.kind != "f":
        return False
    kind = type(other)
    if kind is np.ndarray:  # the most frequent: tested first, the same dtype by identity
        theirs = other.dtype
        if theirs is not dtype and theirs != dtype and np.promote_types(dtype, theirs) != dtype:
            return False
        big, small = owned.shape, other.shape
        if small == big or not small:
            return True
        if len(small) > len(big):
            return False
        # each axis broadcasts into ``owned``; a loop, not all(): no generator on a hot path
        for size, this in zip(big[::-1], small[::-1]):  # noqa: SIM110
            if this != 1 and this != size:
                return False
        return True
    if kind is float or kind is int:  # a Python number takes the array's type (NEP 50)
        return True
    return owned.shape == np.broadcast_shapes(owned.shape, np.shape(other)) and (
        owned.dtype == np.result_type(owned, other)
    )


def add_into(owned, other):
    """``owned + other``, written into ``owned`` when the caller made it and shares it with
    nobody (and it has the result's shape and type): the same numbers (``a + b`` is ``b + a``
    in floating point), one array less to allocate and fill on a grid search's hot path."""
    if _into(owned, other):
        owned += other
        return owned
    return owned + other


def minimum_into(owned, other):
    """``np.minimum(owned, other)``, written into ``owned`` as ``add_into`` does."""
    if _into(owned, other):
        return np.minimum(owned, other, out=owned)
    return np.minimum(owned, other)


def multiply_into(owned, other):
    """``owned * other``, written into ``owned`` as ``add_into`` does (``a · b`` is ``b · a``)."""
    if _into(owned, other):
        owned *= other
        return owned
    return owned * other


def zero_where(owned, mask):
    """``np.where(~mask, owned, 0.0)`` with ``mask`` the points to zero, written into ``owned``
    when ``add_into`` would write into it."""
    if _into(owned, mask) and owned.dtype.kind == "f":
        np.copyto(owned, 0.0, where=mask)
        return owned
    return np.where(mask, 0.0, owned)


def divide_into(owned, other):
    """``owned / other``, written into ``owned`` as ``add_into`` does."""
    if _into(owned, other):
        owned /= other
        return owned
    return owned / other


def maximum_into(owned, other):
    """``np.maximum(owned, other)``, written into ``owned`` as ``add_into`` does."""
    if _into(owned, other):
        return np.maximum(owned, other, out=owned)
    return np.maximum(owned, other)


def affine_minimum(pairs, x):
    """``min(a + b·x)`` over the ``(a, b)`` pairs (protocols: latency and seconds per unit of
    ``x``), each ``a + b·x`` computed as written and the minimum taken in place, one array
    reused for every pair: the same numbers as ``np.minimum`` of ``a + b * x`` pair by pair."""
    best = spare = first = None
    for a, b in pairs:
        kind = (
            (type(b), b.shape, b.dtype)
            if type(b) is np.ndarray
            else (type(b), np.shape(b), getattr(b, "dtype", None))
        )
        if spare is not None and kind == first:  # the product has the spare array's shape
            t = np.multiply(b, x, out=spare)
        else:
            t = b * x
        first = first or kind
        t = add_into(t, a)
        if best is None:
            best = t
        else:
            best = minimum_into(best, t)
            spare = t if type(t) is np.ndarray and t is not best else None
    return best
