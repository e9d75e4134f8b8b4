"""No import cycles between the modules of clawloop/ (issue #18), nor of sandbox/ (#38).

Function-local imports count: moving an import into a function only hides a cycle (the two
modules still need each other, and which one may import the other at the top is an accident of
which was written first). A cycle is fixed by moving what both need into a lower module.
"""

from __future__ import annotations

import pytest
from import_graph import imports, modules, relpath


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def package_graph(package: str = "clawloop") -> dict[str, set[str]]:
    mods = [m for m in modules() if m.split(".")[0] == package]
    return {m: {i.target for i in imports(m) if i.target.split(".")[0] == package} for m in mods}


@pytest.mark.parametrize("package", ["clawloop", "sandbox"])
def test_no_import_cycles_in_clawloop(package: str) -> None:
    graph = package_graph(package)
    assert len(graph) > 10, graph  # the package was found
    cycles = _cycles(graph)

    def show(component: list[str]) -> str:
        inside = set(component)
        edges = [f"{relpath(a)}:{i.line} imports {b}{' (in a function)' if i.local else ''}"
                 for a in component for i in imports(a) if (b := i.target) in inside]
        return "\n  ".join([" <-> ".join(component), *edges])

    assert not cycles, f"{len(cycles)} import cycles:\n" + "\n".join(show(c) for c in cycles)


def unit(module: str) -> str:
    """The package a module belongs to, one level below clawloop (two for core/ and phases/):
    clawloop.core.agent, clawloop.phases.train, clawloop.config, clawloop.errors ..."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[1:2] in (["core"], ["phases"]) and len(parts) > 2 else parts[:2])


def unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in package_graph("clawloop").items():
        graph.setdefault(unit(module), set()).update(unit(t) for t in targets if unit(t) != unit(module))
    for targets in list(graph.values()):
        for t in targets:
            graph.setdefault(t, set())
    return graph


def _edges(a: str, b: str) -> list[str]:
    return [f"{relpath(m)}:{i.line} imports {i.target}" for m in modules()
            if m.startswith("clawloop") and unit(m).startswith(a) for i in imports(m) if unit(i.target).startswith(b)]


def test_no_cycles_between_the_packages_of_clawloop() -> None:
    """One level up: clawloop.core.agent, clawloop.core.tasks, clawloop.config ... depend one way.
    `agent <-> tasks` (the oracle's episode lived in tasks/) and the ring params -> training ->
    executor -> params (ExecutorParams lived in clawloop/params.py) were two such cycles."""
    graph = unit_graph()
    assert {"clawloop.core.agent", "clawloop.core.tasks", "clawloop.config", "clawloop.phases.train"} <= set(graph)
    cycles = _cycles(graph)
    edges = [e for c in cycles for a in c for b in c if a != b for e in _edges(a, b)]
    assert not cycles, f"package cycles {cycles}:\n  " + "\n  ".join(edges)


LAYERS = {
    "clawloop.errors": set(),
    "clawloop.config": {"clawloop.errors"},
    "clawloop.policy": {"clawloop.errors", "clawloop.config"},
    "clawloop.core": {"clawloop.errors", "clawloop.config", "clawloop.policy"},
    "clawloop.artifacts": {"clawloop.errors", "clawloop.config", "clawloop.policy", "clawloop.core"},
    "clawloop.phases": {"clawloop.errors", "clawloop.config", "clawloop.policy", "clawloop.core", "clawloop.artifacts"},
}
"""What each layer may import besides itself and sandbox (top to bottom: a layer may import those
above it in this list, never below). Above the phases stand bootstrap (a scratch base pretrains on
synthesize's generators), report, viewer, commands and the CLI: they may import any phase."""


def _layer(module: str) -> str:
    return next((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), module)


def test_phases_import_the_core_never_each_other() -> None:
    """A phase imports core, policy, config, artifacts, errors and sandbox, never another phase; the
    core never imports a phase (nor artifacts); config imports only errors. A stage that needs two
    phases composes them itself (stages/transfer.py)."""
    wrong = []
    for module, targets in package_graph("clawloop").items():
        layer = _layer(module)
        if layer not in LAYERS:
            continue
        for t in targets:
            allowed = LAYERS[layer] | {layer}
            same_phase = layer == "clawloop.phases" and unit(t) == unit(module)
            if _layer(t) not in allowed or (_layer(t) == "clawloop.phases" and not same_phase):
                wrong += [e for e in _edges(unit(module), unit(t)) if e.startswith(relpath(module))]
    assert {m for m in package_graph("clawloop") if _layer(m) == "clawloop.phases"}, "no phases found"
    assert not wrong, "imports across layers:\n  " + "\n  ".join(sorted(set(wrong)))


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["e", "f"]]
