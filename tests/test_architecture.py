"""The package's layers import only downward, no two modules import each other (directly or
round a longer loop), and the command line starts without numpy."""

import functools
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import module_outline

PACKAGE = Path(__file__).resolve().parent.parent / "inference_econ"

#: Layer of each top-level part of the package (docs/architecture.md), lowest first.
LAYERS = {
    "errors": 0,
    "columns": 0,
    "specs": 1,
    "model": 2,
    "settings": 3,
    "serving": 4,
    "load": 5,
    "optimise": 6,
    "studies": 7,
    "measured": 7,
    "export": 8,
    "runs": 8,
    "output": 8,
    "api": 9,
    "cli": 10,
    "__init__": 10,
    "__main__": 10,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    parts = module.split(".")
    if parts[0] != "inference_econ":
        return -1  # outside the package
    head = parts[1] if len(parts) > 1 else "__init__"
    return LAYERS[head]


@functools.cache
def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in a file, including inside functions (parsed
    once per file, ``conftest.module_outline``: the layer and cycle checks share it)."""
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    )
    found = []
    for line, level, module, names in module_outline(path)[0]:
        if not level and module is None:  # import a.b
            found += [(line, name) for name in names]
            continue
        if level:
            base = package.split(".")
            base = base[: len(base) - (level - 1)]
            target = ".".join(base + ([module] if module else []))
        else:
            target = module or ""
        if module is None:  # from . import x: x is a module of that package
            found += [(line, f"{target}.{name}") for name in names]
        else:
            found.append((line, target))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_only_downward(path):
    own = layer_of(module_name(path))
    for line, target in imports_of(path):
        if layer_of(target) > own:
            pytest.fail(f"{path.relative_to(PACKAGE)}:{line} imports {target} from a higher layer")


def test_every_part_of_the_package_has_a_layer():
    tops = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in MODULES}
    assert tops <= set(LAYERS), tops - set(LAYERS)


def test_a_higher_import_is_caught(tmp_path):
    # the check itself: a model module importing the optimiser would be reported
    fake = PACKAGE / "model" / "latency.py"
    imports = imports_of(fake) + [(1, "inference_econ.optimise.optimiser")]
    assert any(layer_of(t) > layer_of(module_name(fake)) for _, t in imports)


def import_graph(paths) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (inside functions too). ``from pkg import x``
    where ``x`` is not a module counts as an import of ``pkg`` (its ``__init__``)."""
    modules = {module_name(p): p for p in paths}
    graph = {}
    for name, path in modules.items():
        graph[name] = set()
        for _, target in imports_of(path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as [a, b, ..., a], or None (depth-first search)."""
    done, path, on_path = set(), [], {}

    def visit(node):
        on_path[node] = len(path)
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                return path[on_path[nxt] :] + [nxt]
            if nxt not in done and (found := visit(nxt)):
                return found
        path.pop()
        del on_path[node]
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (found := visit(start)):
            return found
    return None


#: What the command line may import of the package: the API, the settings table, the errors,
#: output rendering and itself; everything else it reaches through ``inference_econ.api``.
CLI_MAY_IMPORT = ("inference_econ.settings", "inference_econ.output", "inference_econ.cli")
CLI_MAY_IMPORT_EXACTLY = ("inference_econ.api", "inference_econ.errors")


def cli_reaches_around_the_api(imports) -> list[str]:
    """The imports (line, module) of a command-line module that go around the API."""
    return [
        f"{line}: {target}"
        for line, target in imports
        if target.split(".")[0] == "inference_econ"
        and target not in CLI_MAY_IMPORT_EXACTLY
        and not any(target == m or target.startswith(m + ".") for m in CLI_MAY_IMPORT)
    ]


@pytest.mark.parametrize(
    "path", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_the_command_line_is_a_client_of_the_api(path):
    """Every import of the command line, inside functions too, is of the API, the settings,
    the errors, output rendering or the command line itself."""
    assert cli_reaches_around_the_api(imports_of(path)) == []


def test_an_import_around_the_api_is_caught():
    # the check itself: a command importing the optimiser, or a submodule of the API, is
    # reported; the API, a settings submodule, output rendering and the errors are not
    common = PACKAGE / "cli" / "common.py"
    around = [(1, "inference_econ.optimise.optimiser"), (2, "inference_econ.api.load")]
    assert cli_reaches_around_the_api(imports_of(common) + around) == [
        "1: inference_econ.optimise.optimiser",
        "2: inference_econ.api.load",
    ]
    fine = [(1, "inference_econ.api"), (2, "inference_econ.settings.table")]
    fine += [(3, "inference_econ.output.render"), (4, "inference_econ.errors"), (5, "click")]
    assert cli_reaches_around_the_api(fine) == []


def test_no_import_cycles():
    cycle = find_cycle(import_graph(MODULES))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_is_caught():
    # the check itself: a loop of three modules, and the two-module loop the CLI once had
    loop = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(loop) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    graph = {k: set(v) for k, v in import_graph(MODULES).items()}
    graph["inference_econ.cli.common"].add("inference_econ.cli.decode_commands")
    assert find_cycle(graph) is not None


def test_the_command_line_loads_without_the_numeric_stack():
    code = (
        "import sys, inference_econ.cli;"
        "print(sorted(m for m in ('numpy', 'pandas', 'matplotlib', 'scipy', 'yaml') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
