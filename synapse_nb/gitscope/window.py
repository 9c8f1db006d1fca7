"""Which new commits a revert scan reads when there are more than ``max_commits``, and where the next scan resumes.

A window cut never loses a revert (review 42: an agent's 2,001 empty commits dated 2090 filled a newest-first window,
and the scan saved every tip as scanned, so the person's revert was never read). The window takes commits from both
ends of the new history:

- the *bottom*: the oldest new commits (those nearest the previous position), HEAD's history first, then the others
  by their distance from the previous position. This part is closed under parents, so the next scan resumes at its
  frontier and goes on from there: a flood delays the commits above it by a scan or a few, never hides them;
- the *top*: the newest commits, HEAD's history first, then the others by their distance from a tip, so a commit
  just made on the checked-out branch is read at once, whatever an agent piled on another branch.

A first scan (no previous position) reads only the top: history before it is history before the vault, as before.

>>> nodes = [("c", ("b",)), ("x2", ("x1",)), ("b", ("a",)), ("x1", ("a",)), ("a", ())]
>>> choose(nodes, tips={"c", "x2"}, head="c", budget=4, resume=True)  # x1 waits; the next scan resumes from b
(['c', 'x2', 'b', 'a'], ['b'])
>>> choose(nodes, tips={"c", "x2"}, head="c", budget=9, resume=True)
(['c', 'x2', 'b', 'x1', 'a'], None)
"""

from __future__ import annotations

__all__ = ["choose", "merge"]

_Nodes = list[tuple[str, tuple[str, ...]]]


def choose(
    nodes: _Nodes, *, tips: set[str], head: str | None, budget: int, resume: bool
) -> tuple[list[str], list[str] | None]:
    """The commits to read (in ``nodes``' order: children before parents) and, when the window is cut and the scan
    resumes from a previous position, the frontier of the part read from the bottom (None: the window holds all of
    ``nodes``, or this is a first scan).

    ``nodes`` is :func:`synapse_nb.gitscope.history.graph`'s output: the new commits, children before parents.
    """
    if len(nodes) <= budget:
        return [sha for sha, _ in nodes], None
    index = {sha: i for i, (sha, _) in enumerate(nodes)}
    parents = {sha: tuple(p for p in ps if p in index) for sha, ps in nodes}
    mine: set[str] = set()  # HEAD's new history
    stack = [head] if head in index else []
    while stack:
        sha = stack.pop()
        if sha not in mine:
            mine.add(sha)
            stack.extend(parents[sha])
    bottom: list[str] = []
    if resume:
        depth: dict[str, int] = {}  # distance from the previous position
        for sha, _ in reversed(nodes):
            depth[sha] = 1 + max((depth[p] for p in parents[sha]), default=-1)
        # a parent sorts before its children (HEAD's history is closed under parents): every prefix is too
        bottom = sorted(index, key=lambda s: (s not in mine, depth[s], -index[s]))[: max(1, budget // 2)]
    height: dict[str, int] = {}  # distance from the nearest tip
    for sha, _ in nodes:
        h = height.setdefault(sha, 0 if sha in tips else len(nodes))
        for p in parents[sha]:
            height[p] = min(height.get(p, len(nodes)), h + 1)
    taken = set(bottom)
    top = [s for s in sorted(index, key=lambda s: (s not in mine, height[s], index[s])) if s not in taken]
    taken.update(top[: budget - len(bottom)])
    window = sorted(taken, key=index.__getitem__)
    if not resume:
        return window, None
    below = {p for sha in bottom for p in parents[sha]}
    return window, sorted(sha for sha in bottom if sha not in below)


def merge(*parts: _Nodes) -> _Nodes:
    """The union of several :func:`~synapse_nb.gitscope.history.graph` outputs, children before parents again
    (Kahn's order over the union: a first scan's HEAD part and all tips' part, review 45).

    >>> merge([("b", ("a",)), ("a", ())], [("c", ("a",)), ("a", ())])
    [('b', ('a',)), ('c', ('a',)), ('a', ())]
    """
    parents: dict[str, tuple[str, ...]] = {}
    for part in parts:
        for sha, ps in part:
            parents.setdefault(sha, ps)
    children = dict.fromkeys(parents, 0)
    for ps in parents.values():
        for p in ps:
            if p in children:
                children[p] += 1
    ready = [sha for sha, n in children.items() if n == 0]
    ready.reverse()
    out: _Nodes = []
    while ready:
        sha = ready.pop()
        out.append((sha, parents[sha]))
        for p in reversed(parents[sha]):
            if p in children:
                children[p] -= 1
                if children[p] == 0:
                    ready.append(p)
    return out
