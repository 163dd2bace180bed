"""The catalog of spec files and the files a command reads: where the shipped and the user's
data come from, what was skipped, models imported from Hugging Face configs, and the inputs
an output must never overwrite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..specs.architecture import Architecture


def display_path(path: str | os.PathLike) -> str:
    """A file as outputs name it: a shipped one relative to the package's data, a user's whole.

    Parameters
    ----------
    path : str or path
        The file.

    Returns
    -------
    str
        Its name in outputs.
    """
    from ..specs.catalog import display_path as shown

    return shown(path)


def extra_data_roots() -> list[str]:
    """The data folders INFERENCE_ECON_PATH adds to the package's.

    Returns
    -------
    list of str
        The folders, highest priority first.
    """
    from ..specs.catalog import data_roots, shipped_roots

    return [str(r) for r in data_roots() if r not in shipped_roots()]


def skipped_specs(kind: str) -> list[str]:
    """Why spec files of one kind were left out of the catalog, one sentence each.

    Parameters
    ----------
    kind : str
        ``models``, ``hardware``, ``scenarios``, ``engines`` or ``costs``.

    Returns
    -------
    list of str
        The problems.
    """
    from ..specs.catalog import skipped

    return [s.problem for s in skipped(kind)]


def unread_user_roots() -> tuple[str, ...]:
    """Why an INFERENCE_ECON_PATH entry gives nothing, one sentence each.

    Returns
    -------
    tuple of str
        The reasons (a path that is not a folder, a folder without spec subfolders).
    """
    from ..specs.catalog import unread_user_roots as unread

    return unread()


def package_version() -> str:
    """The installed package's version (outputs state what computed them).

    Returns
    -------
    str
        The version.
    """
    from ..studies.study import package_version as version

    return version()


def import_hf_config(path, name: str | None = None) -> tuple[Architecture, str]:
    """A model from a Hugging Face ``config.json``.

    Parameters
    ----------
    path : str or Path
        The file.
    name : str, optional
        The model's name (default the config's).

    Returns
    -------
    tuple
        (the Architecture, its YAML).
    """
    from ..specs.hf_import import import_config

    return import_config(path, name)


def import_hf_repo(
    repo_id: str, name: str | None = None, revision: str | None = None
) -> tuple[Architecture, str]:
    """A model from a Hugging Face Hub repository's ``config.json``.

    Parameters
    ----------
    repo_id : str
        ``org/name``.
    name : str, optional
        The model's name (default the repository's).
    revision : str, optional
        A branch, tag or commit.

    Returns
    -------
    tuple
        (the Architecture, its YAML).
    """
    from ..specs.hf_import import import_repo

    return import_repo(repo_id, name, revision)


def tracking_inputs() -> AbstractContextManager[Iterator[dict]]:
    """A context in which the files read are remembered (``record_input``), so an output never
    overwrites one.

    Returns
    -------
    context manager
        The tracking, ended on exit.
    """
    from ..specs.inputs import tracking

    return tracking()


def record_input(path: str | os.PathLike) -> None:
    """Remember a file as an input of the command running.

    Parameters
    ----------
    path : str or path
        The file.

    Returns
    -------
    None
    """
    from ..specs.inputs import record

    record(path)


def file_identity(path: str | os.PathLike) -> tuple[int, int] | None:
    """A file's identity (device and inode), one for every name of it.

    Parameters
    ----------
    path : str or path
        The file.

    Returns
    -------
    tuple of int or None
        (device, inode); None when there is no such file.
    """
    from ..specs.inputs import identity

    return identity(path)


__all__ = [
    "display_path",
    "extra_data_roots",
    "file_identity",
    "import_hf_config",
    "import_hf_repo",
    "package_version",
    "record_input",
    "skipped_specs",
    "tracking_inputs",
    "unread_user_roots",
]
