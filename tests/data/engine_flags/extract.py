"""Write the checked-in records of the engines' command-line flags (tests/data/engine_flags/).

Run on source trees unpacked from the engines' published packages (README.md beside this file
says which); the records are what tests/test_export.py checks every exported flag and field
against. The engines need CUDA and torch to import, so their parsers are read from the source
(``ast``) rather than run; sglang-router's parser imports nothing heavy and is run.

    python tests/data/engine_flags/extract.py vllm   /tmp/src/vl   > tests/data/engine_flags/vllm-0.11.0.json
    python tests/data/engine_flags/extract.py sglang /tmp/src/sgl  > tests/data/engine_flags/sglang-0.5.3.json
    python tests/data/engine_flags/extract.py router /tmp/src/rt   > tests/data/engine_flags/sglang-router-0.2.0.json
    python tests/data/engine_flags/extract.py vllm-bench /tmp/src/vl > tests/data/engine_flags/vllm-bench-0.11.0.json
    python tests/data/engine_flags/extract.py aiperf "$(which aiperf)" > tests/data/engine_flags/aiperf-0.13.0.json
    python tests/data/engine_flags/extract.py ray    /tmp/src/ray  > tests/data/engine_flags/ray-2.48.0.json
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import sys
from pathlib import Path


def _literal_aliases(trees) -> dict:
    """Module-level ``Name = Literal[...]`` and list/tuple/set literals: name -> values."""
    out = {}
    for tree in trees:
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target = node.targets[0]
            if not isinstance(target, ast.Name):
                continue
            value = node.value
            if isinstance(value, ast.Subscript) and getattr(value.value, "id", "") == "Literal":
                items = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
                out[target.id] = [i.value for i in items if isinstance(i, ast.Constant)]
            elif isinstance(value, (ast.List, ast.Tuple, ast.Set)):
                vals = [i.value for i in value.elts if isinstance(i, ast.Constant)]
                if vals and len(vals) == len(value.elts):
                    out[target.id] = vals
    return out


def _class_fields(tree, name: str) -> dict:
    """Annotated fields of a class: field -> annotation text."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {
                s.target.id: ast.unparse(s.annotation)
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
    raise SystemExit(f"class {name} not found")


def _choices(annotation: str, aliases: dict):
    for alias, values in aliases.items():
        if alias in annotation.replace("[", " ").replace("]", " ").replace("|", " ").split():
            return values
    return None


def _add_argument_flags(tree, aliases: dict, fields: dict) -> dict:
    """Every ``add_argument("--x", ...)`` with literal names: flag -> {kind, choices, aliases}."""
    flags = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
            continue
        names = [
            a.value
            for a in node.args
            if isinstance(a, ast.Constant) and str(a.value).startswith("-")
        ]
        longs = [n for n in names if n.startswith("--")]
        if not longs:
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = kw.get("action")
        action_text = ast.unparse(action) if action is not None else ""
        field = longs[0][2:].replace("-", "_")
        annotation = ""
        for k in node.keywords:  # **model_kwargs["field"]: the config field's annotation
            if k.arg is None and isinstance(k.value, ast.Subscript):
                key = k.value.slice
                if isinstance(key, ast.Constant):
                    annotation = fields.get(key.value, "")
        annotation = annotation or fields.get(field, "")
        switch = "store_true" in action_text or "BooleanOptional" in action_text
        negatable = "BooleanOptional" in action_text
        if (
            not action_text
            and annotation
            and "bool" in annotation.split("|")[0]
            and "str" not in annotation
        ):
            switch = negatable = True  # vLLM's get_kwargs: a bool field is --x / --no-x
        choices = None
        if "choices" in kw:
            try:
                choices = ast.literal_eval(kw["choices"])
            except ValueError:
                choices = aliases.get(getattr(kw["choices"], "id", ""))
        elif annotation:
            choices = _choices(annotation, aliases)
        entry = {"kind": "switch" if switch else "value"}
        if choices is not None:
            entry["choices"] = sorted(str(c) for c in choices)
        short = [n for n in names if not n.startswith("--")]
        if short:
            entry["aliases"] = short
        flags[longs[0]] = entry
        for extra in longs[1:]:
            flags[extra] = entry
        if negatable:
            flags["--no-" + longs[0][2:]] = {"kind": "switch"}
    return flags


def _parse(path: Path):
    return ast.parse(path.read_text(encoding="utf-8"))


def vllm(root: Path) -> dict:
    args = _parse(root / "vllm/engine/arg_utils.py")
    config = [_parse(p) for p in sorted((root / "vllm/config").glob("*.py"))]
    quant = _parse(root / "vllm/model_executor/layers/quantization/__init__.py")
    aliases = _literal_aliases(config + [quant, args])
    fields = _class_fields(args, "EngineArgs")
    flags = _add_argument_flags(args, aliases, fields)
    front = _parse(root / "vllm/entrypoints/openai/cli_args.py")
    for name, annotation in _class_fields(front, "FrontendArgs").items():
        kind = "switch" if annotation.startswith("bool") else "value"
        flags.setdefault("--" + name.replace("_", "-"), {"kind": kind})
    flags.update(_add_argument_flags(front, aliases, {}))
    spec = _class_fields(
        next(t for t in config if _has(t, "SpeculativeConfig")), "SpeculativeConfig"
    )
    kv = _class_fields(next(t for t in config if _has(t, "KVTransferConfig")), "KVTransferConfig")
    eplb = _class_fields(next(t for t in config if _has(t, "EPLBConfig")), "EPLBConfig")
    version = (root / "vllm/_version.py").read_text().split("version = ")[1].splitlines()[0]
    return {
        "engine": "vllm",
        "version": version.strip("'\""),
        "command": "vllm serve MODEL",
        "flags": dict(sorted(flags.items())),
        "json_fields": {
            "--speculative-config": {
                "fields": sorted(spec),
                "method": aliases["SpeculativeMethod"],
            },
            "--kv-transfer-config": {
                "fields": sorted(kv),
                "kv_role": ["kv_both", "kv_consumer", "kv_producer"],
            },
            "--eplb-config": {"fields": sorted(eplb)},
        },
        "environment": _environment(_parse(root / "vllm/envs.py")),
    }


def _environment(tree) -> dict:
    """The environment variables vLLM reads (vllm/envs.py's ``if TYPE_CHECKING:`` block of
    annotated names): name -> {} or {"choices": [...]} where the annotation is a Literal."""
    out = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for s in node.body:
            if not (isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)):
                continue
            literals = [
                n
                for n in ast.walk(s.annotation)
                if isinstance(n, ast.Subscript) and getattr(n.value, "id", "") == "Literal"
            ]
            entry = {}
            if literals:
                items = literals[0].slice
                elts = items.elts if isinstance(items, ast.Tuple) else [items]
                entry["choices"] = sorted(str(e.value) for e in elts if isinstance(e, ast.Constant))
            out[s.target.id] = entry
    return dict(sorted(out.items()))


def _has(tree, name: str) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name == name for n in ast.walk(tree))


def vllm_bench(root: Path) -> dict:
    trees = [
        _parse(root / "vllm/benchmarks/serve.py"),
        _parse(root / "vllm/benchmarks/datasets.py"),
    ]
    flags = {}
    for tree in trees:
        flags.update(_add_argument_flags(tree, _literal_aliases(trees), {}))
    return {
        "tool": "vllm bench serve",
        "version": vllm(root)["version"],
        "flags": dict(sorted(flags.items())),
    }


def sglang(root: Path) -> dict:
    tree = _parse(root / "sglang/srt/server_args.py")
    aliases = _literal_aliases([tree])
    flags = _add_argument_flags(tree, aliases, _class_fields(tree, "ServerArgs"))
    version = (root / "sglang/version.py").read_text().split("=")[1].strip().strip("'\"")
    return {
        "engine": "sglang",
        "version": version,
        "command": "python -m sglang.launch_server",
        "flags": dict(sorted(flags.items())),
    }


def router(root: Path) -> dict:
    """sglang-router's own parser, run (its module imports only the standard library)."""
    spec = importlib.util.spec_from_file_location(
        "router_args", root / "sglang_router/router_args.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parser = argparse.ArgumentParser()
    module.RouterArgs.add_cli_args(parser, use_router_prefix=False)
    flags = {}
    for action in parser._actions:
        for name in action.option_strings:
            if name.startswith("--") and name != "--help":
                kind = "switch" if action.nargs == 0 else "value"
                entry = {"kind": kind}
                if action.choices:
                    entry["choices"] = sorted(str(c) for c in action.choices)
                flags[name] = entry
    return {
        "engine": "sglang-router",
        "command": "python -m sglang_router.launch_router",
        "flags": dict(sorted(flags.items())),
    }


def ray(root: Path) -> dict:
    """``ray start``'s click options (ray/scripts/scripts.py): a flag option is a switch."""
    tree = _parse(root / "ray/scripts/scripts.py")
    (start,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "start"]
    flags = {}
    for deco in start.decorator_list:
        if not (isinstance(deco, ast.Call) and ast.unparse(deco.func) == "click.option"):
            continue
        names = [a.value for a in deco.args if isinstance(a, ast.Constant)]
        switch = any(
            k.arg == "is_flag" and isinstance(k.value, ast.Constant) and k.value.value
            for k in deco.keywords
        )
        for name in names:
            if isinstance(name, str) and name.startswith("--"):
                flags[name] = {"kind": "switch" if switch else "value"}
    (meta,) = root.glob("ray-*.dist-info/METADATA")  # the wheel's own metadata
    return {
        "tool": "ray start",
        "version": re.search(r"^Version: (\S+)$", meta.read_text(), re.M).group(1),
        "flags": dict(sorted(flags.items())),
    }


def aiperf(executable: Path) -> dict:
    """aiperf's options as its own ``aiperf profile --help`` lists them (aiperf installs
    without torch; its CLI is built from its pydantic configuration)."""
    import os
    import subprocess

    env = dict(os.environ, COLUMNS="200")
    text = subprocess.run(
        [str(executable), "profile", "--help"], capture_output=True, text=True, env=env, check=True
    ).stdout
    version = subprocess.run(
        [str(executable), "--version"], capture_output=True, text=True, env=env, check=True
    ).stdout.split()[-1]
    flags = set()
    for line in text.splitlines():
        m = re.match(r"^\u2502 ((?:--?[a-zA-Z0-9][\w-]*\s?)+)\s{2,}", line)
        if m:
            flags.update(t for t in m.group(1).split() if t.startswith("--"))
    return {"tool": "aiperf profile", "version": version, "flags": {f: {} for f in sorted(flags)}}


if __name__ == "__main__":
    which, root = sys.argv[1], Path(sys.argv[2])
    makers = {
        "vllm": vllm,
        "vllm-bench": vllm_bench,
        "sglang": sglang,
        "router": router,
        "ray": ray,
    }
    record = {**makers, "aiperf": aiperf}[which](root)
    json.dump(record, sys.stdout, indent=1)
    sys.stdout.write("\n")
