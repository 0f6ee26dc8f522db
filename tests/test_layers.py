"""The layers of `src/proctor`: no import cycle, and no package importing one above it.

The order is the line of `<`-separated package names in docs/architecture.md ("Layers"):
a package may import itself and the packages to its left. The root `proctor/__init__.py`
(the public API) sits above them all, and no module imports it. Every import statement
counts, inside functions and under `TYPE_CHECKING` too: a lazy import is still an edge.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOT = "proctor"
ARCHITECTURE = REPO / "docs" / "architecture.md"
_LAYER_LINE = re.compile(r"\w+(?: < \w+)+")


def layer_order(text: str) -> list[str]:
    """The one line of the document that is package names joined by ` < `."""
    found = [line.strip() for line in text.splitlines() if _LAYER_LINE.fullmatch(line.strip())]
    assert len(found) == 1, f"expected one layer line (`a < b < ...`), found {len(found)}"
    return found[0].split(" < ")


def module_files(src: Path) -> dict[str, Path]:
    """Dotted module name → file, for every module of the `proctor` package under `src`."""
    out = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(node: ast.AST, here: str, is_package: bool) -> Iterator[tuple[str, str | None]]:
    """(module, imported name or None) of one import statement, relative ones resolved."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, None
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = here.split(".") if is_package else here.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        for alias in node.names:
            yield module, alias.name


def import_graph(src: Path) -> dict[str, set[str]]:
    """Module → the proctor modules it imports (a `from m import sub` names the submodule)."""
    files = module_files(src)
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            for module, item in _imported(node, name, path.name == "__init__.py"):
                if module != ROOT and not module.startswith(ROOT + "."):
                    continue
                if item is not None and f"{module}.{item}" in files:
                    module = f"{module}.{item}"
                while module not in files and "." in module:
                    module = module.rsplit(".", 1)[0]
                targets.add(module)
        targets.discard(name)
        graph[name] = targets
    return graph


def package_of(module: str) -> str:
    """`proctor.grade.safety` → `grade`; the root module is `proctor`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = package_of(module)
        out.setdefault(here, set()).update(package_of(t) for t in targets if package_of(t) != here)
    return out


def layer_violations(graph: dict[str, set[str]], order: list[str]) -> list[str]:
    """`module -> module` for every import that is not of the same or a lower layer."""
    rank = {name: i for i, name in enumerate(order)}
    bad = []
    for module, targets in sorted(graph.items()):
        here = package_of(module)
        for target in sorted(targets):
            there = package_of(target)
            if there == ROOT:
                bad.append(f"{module} -> {target} (nothing inside imports the root package)")
            elif here in rank and there in rank and rank[there] > rank[here]:
                bad.append(f"{module} -> {target} ({there} is above {here})")
    return bad


def unplaced(src: Path, order: list[str]) -> list[str]:
    """Packages the layer line lacks, layers with no package, and loose top-level modules."""
    top = {p.name for p in (src / ROOT).iterdir() if (p / "__init__.py").is_file()}
    loose = sorted(p.name for p in (src / ROOT).glob("*.py") if p.name != "__init__.py")
    return [
        *(f"package {name} is not in the layer line" for name in sorted(top - set(order))),
        *(f"layer {name} has no package" for name in order if name not in top),
        *(f"{name} lies outside a package" for name in loose),
    ]


#: The store's SQLite connection (`Store._db`): its tables and queries live in store/, so
#: nothing else reads or writes it (docs/architecture.md, Packages: store/).
CONNECTION = frozenset({"db", "_db"})


def connection_uses(paths: Iterable[Path], root: Path) -> list[str]:
    """`file:line` of every `.db` or `._db` attribute in `paths` (a file name such as
    `"p.db"` is a string, not an attribute, and a local `db` is a name)."""
    out = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in CONNECTION:
                out.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return sorted(out)


# -- the project's own tree ----------------------------------------------------------------

SRC = REPO / "src"


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(SRC)


@pytest.fixture(scope="module")
def order() -> list[str]:
    return layer_order(ARCHITECTURE.read_text(encoding="utf-8"))


def test_every_package_has_a_layer(order: list[str]) -> None:
    assert unplaced(SRC, order) == []


def test_no_module_cycle(graph: dict[str, set[str]]) -> None:
    assert cycles(graph) == []


def test_no_package_cycle(graph: dict[str, set[str]]) -> None:
    assert cycles(package_graph(graph)) == []


def test_no_package_imports_a_higher_layer(graph: dict[str, set[str]], order: list[str]) -> None:
    assert layer_violations(graph, order) == []


def test_only_the_store_touches_its_connection() -> None:
    """Outside store/, and in tests but the store's own and the one helper that hands a
    test the connection (tests/store_sql.py), no `.db`."""
    store = SRC / ROOT / "store"
    src = [p for p in (SRC / ROOT).rglob("*.py") if store not in p.parents]
    tests = [
        p
        for p in (REPO / "tests").glob("*.py")
        if p.name != "store_sql.py" and not p.name.startswith("test_store")
    ]
    assert connection_uses([*src, *tests], REPO) == []


def test_the_docs_describe_every_package(order: list[str]) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout") : readme.index("## Scale and resilience")]
    architecture = ARCHITECTURE.read_text(encoding="utf-8")
    for name in order:
        assert f"\n  {name}/" in layout, f"README's Layout lacks {name}/"
        assert f"**{name}/**" in architecture, f"docs/architecture.md describes no {name}/"


#: A cli/ module is named after its command or family of commands (`health.py` is
#: `proctor health`), so it may share a name with the module that does the work.
NAMED_BY_COMMAND = "cli"


def repeated_names(src: Path) -> dict[str, list[str]]:
    """File name → its modules, for every name two modules outside cli/ share."""
    seen: dict[str, list[str]] = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        relative = path.relative_to(src / ROOT)
        if path.name != "__init__.py" and relative.parts[0] != NAMED_BY_COMMAND:
            seen.setdefault(path.name, []).append(relative.as_posix())
    return {name: paths for name, paths in seen.items() if len(paths) > 1}


def test_a_name_says_what_the_file_holds() -> None:
    """One home per concept, one file per name (docs/architecture.md, Packages)."""
    assert repeated_names(SRC) == {}


def test_pure_statistics_are_the_ground_floor(graph: dict[str, set[str]], order: list[str]) -> None:
    """stats/ sits right above core and imports nothing of proctor but itself; human
    labels sit below the judges that calibrate on them, recorded traces beside the run."""
    assert order[:2] == ["core", "stats"]
    assert order.index("decide") < order.index("labels") < order.index("judge")
    assert order.index("traces") == order.index("run") + 1
    outside = [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        if package_of(module) == "stats"
        for target in sorted(targets)
        if package_of(target) != "stats"
    ]
    assert outside == []


def test_the_name_check_sees_repeats_but_not_commands(tmp_path: Path) -> None:
    for name in ("a/labels.py", "b/labels.py", "cli/labels.py", "c/x.py", "a/__init__.py"):
        path = tmp_path / ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
    (tmp_path / ROOT / "b" / "__init__.py").write_text("", encoding="utf-8")
    assert repeated_names(tmp_path) == {"labels.py": ["a/labels.py", "b/labels.py"]}


# -- the checker itself, on a tree made to break every rule ---------------------------------


def test_the_checker_sees_every_kind_of_import_and_breach(tmp_path: Path) -> None:
    files = {
        "__init__.py": "from proctor.low import thing\n",
        "stray.py": "",
        "low/__init__.py": "from . import a\n",
        "low/a.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from proctor.high.b import B\n"
        ),
        "low/c.py": "def f():\n    from .. import __version__\n",
        "low/d.py": "from .e import x\n",
        "low/e.py": "import proctor.low.d\n",
        "high/__init__.py": "",
        "high/b.py": "from proctor.low import a, thing\n",
        "extra/__init__.py": "",
    }
    for name, text in files.items():
        path = tmp_path / ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert graph["proctor.low"] == {"proctor.low.a"}
    assert graph["proctor.high.b"] == {"proctor.low.a", "proctor.low"}
    assert cycles(graph) == [
        ["proctor.high.b", "proctor.low", "proctor.low.a"],  # through TYPE_CHECKING
        ["proctor.low.d", "proctor.low.e"],
    ]
    assert cycles(package_graph(graph)) == [["high", "low", "proctor"]]
    assert layer_violations(graph, ["low", "high", "extra"]) == [
        "proctor.low.a -> proctor.high.b (high is above low)",
        "proctor.low.c -> proctor (nothing inside imports the root package)",
    ]
    assert unplaced(tmp_path, ["low", "high", "gone"]) == [
        "package extra is not in the layer line",
        "layer gone has no package",
        "stray.py lies outside a package",
    ]
    assert layer_order("x\n\n    core < tasks < env\n") == ["core", "tasks", "env"]


def test_the_connection_check_sees_both_names_and_only_attributes(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        'Store("p.db").db.execute("x")\n'
        "db = connect()\n"
        "db.execute('y')\n"
        "store._db.commit()\n"
        "other.dbs = 1\n",
        encoding="utf-8",
    )
    assert connection_uses([path], tmp_path) == ["m.py:1", "m.py:4"]
