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


def test_no_cycles_between_the_packages_of_clawloop() -> None:
    """One level up: clawloop.agent, clawloop.tasks, clawloop.config ... (a subpackage or a top-level
    module each) depend one way. `agent <-> tasks` (the oracle's episode lived in tasks/) and the ring
    params -> training -> executor -> params (ExecutorParams lived in clawloop/params.py) were two such cycles."""
    def unit(module: str) -> str:
        return ".".join(module.split(".")[:2])

    graph: dict[str, set[str]] = {}
    for module, targets in package_graph("clawloop").items():
        graph.setdefault(unit(module), set()).update(unit(t) for t in targets if unit(t) != unit(module))
    for targets in list(graph.values()):
        for t in targets:
            graph.setdefault(t, set())
    assert {"clawloop.agent", "clawloop.tasks", "clawloop.config", "clawloop.training"} <= set(graph)
    cycles = _cycles(graph)
    edges = [f"{relpath(m)}:{i.line} imports {i.target}" for c in cycles for m in modules()
             if unit(m) in c for i in imports(m) if unit(i.target) in c and unit(i.target) != unit(m)]
    assert not cycles, f"package cycles {cycles}:\n  " + "\n  ".join(edges)


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["e", "f"]]
