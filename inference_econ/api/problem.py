"""The problem a call of the API describes: a ``Setting``, given whole or built from names and
settings (one place, so every function refuses a Setting given with other settings alike)."""

from __future__ import annotations

import dataclasses

from ..errors import SpecError, short
from ..serving.setting import Setting, make_setting


def setting_of(model, hardware, **kwargs) -> Setting:
    """The ``Setting`` a call describes: ``model`` itself when it is one (then nothing else may
    be given), else ``make_setting(model, hardware, **kwargs)``.

    Parameters
    ----------
    model : str, Architecture or Setting
        A model's name, file or ``Architecture``; or a whole ``Setting``.
    hardware : str or GPU, optional
        The GPU (not with a Setting).
    **kwargs
        Settings of what is served (``make_setting``'s; not with a Setting).

    Returns
    -------
    Setting
        The problem the call solves.
    """
    if isinstance(model, Setting):
        if hardware is not None:
            # ie.frontier(setting, method) would otherwise drop the method without a word
            raise SpecError(
                "argument",
                "hardware",
                f"is {short(hardware)}, given together with a Setting (which has its GPU)",
                "pass only the Setting; a search method goes by keyword: method=...",
            )
        if kwargs:
            key = next(iter(kwargs))
            fix = f"change the setting with setting.replace({key}=...) instead"
            if key not in {f.name for f in dataclasses.fields(Setting)}:
                fix = f"build the setting with ie.make_setting(model, hardware, {key}=...)"
            raise SpecError("argument", key, "given together with a Setting", fix)
        return model
    return make_setting(model, hardware, **kwargs)
