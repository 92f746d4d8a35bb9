"""Memory by prefix as an icicle flame graph: a self-contained SVG (no script, no
stylesheet or font from outside), one row a level: all keys, each db, each prefix level,
then the heaviest keys; a box's width is its memory, its colour the type holding most of
its memory, its ``<title>`` (the tooltip) its full name, bytes and share. What is too
narrow to see, and the memory of keys not drawn, is one grey "other" box under its
parent, so that every row of children fills its parent exactly.

Bounded whatever the number of keys: at most ``cap`` prefixes (the heavier half kept when
it fills, as :class:`.usage.PrefixTable` does) and the :data:`KEYS_DRAWN` heaviest keys."""

from __future__ import annotations

import heapq
from xml.sax.saxutils import escape

from ....messages.text import key_text
from ....outputs.escape import safe

WIDTH = 1200
ROW = 18
#: the narrowest box drawn (px); narrower ones go into their parent's "other"
MIN_BOX = 1.0
#: the narrowest box that gets its name written in it (px)
LABEL_BOX = 36
CHAR_PX = 6.6
#: the heaviest keys drawn as boxes of their own
KEYS_DRAWN = 2000
COLOURS = {"string": "#e6855e", "hash": "#5b9bd5", "list": "#70ad47", "set": "#ffc000", "zset": "#a66fd4",
           "stream": "#d4627a", "module": "#8c8c8c"}
NEUTRAL, OTHER = "#c9c2b6", "#dddddd"


class Flame:
    """Memory by (db, prefix path), fed key by key (:meth:`add`), drawn by :meth:`svg`."""

    def __init__(self, cap: int = 100_000, keys_drawn: int = KEYS_DRAWN) -> None:
        self.cap = cap
        self.total = 0
        #: (db, prefix, prefix, ...) -> [memory, {type: memory}]
        self.nodes: dict[tuple, list] = {}
        self.pruned = 0
        self._keys: list[tuple[int, int, tuple]] = []
        self._seq = 0
        self.keys_drawn = keys_drawn

    def add(self, m, prefixes: list[bytes]) -> None:
        total = m.memory.total
        self.total += total
        path: tuple = (m.db,)
        self._count(path, total, m.type)
        for p in prefixes:
            path = path + (p,)
            self._count(path, total, m.type)
        self._seq += 1
        item = (total, -self._seq, path + ((m.key,),), m.type)  # a key: a 1-tuple, no prefix
        if len(self._keys) < self.keys_drawn:
            heapq.heappush(self._keys, item)
        elif item > self._keys[0]:
            heapq.heapreplace(self._keys, item)

    def _count(self, path: tuple, total: int, vtype: str) -> None:
        node = self.nodes.get(path)
        if node is None:
            if len(self.nodes) >= self.cap:
                keep = heapq.nlargest(self.cap // 2, self.nodes.items(), key=lambda kv: kv[1][0])
                self.pruned += len(self.nodes) - len(keep)
                self.nodes = dict(keep)
            node = self.nodes[path] = [0, {}]
        node[0] += total
        node[1][vtype] = node[1].get(vtype, 0) + total

    # ------------------------------------------------------------------ drawing

    def tree(self) -> dict:
        """The nodes as a tree: {path: [children's paths]} with the drawn keys as leaves."""
        children: dict[tuple, list] = {(): []}
        for path in self.nodes:
            children.setdefault(path[:-1], []).append(path)
        for total, _, path, vtype in self._keys:
            parent = path[:-1]
            while parent and parent not in self.nodes:
                parent = parent[:-1]
            children.setdefault(parent, []).append(path)
            self.nodes.setdefault(path, [total, {vtype: total}])
        return children

    def svg(self) -> str:
        children = self.tree()
        depth = max((len(p) for p in self.nodes), default=0) + 1
        height = (depth + 2) * ROW + 30
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
               f'viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="11">',
               '<rect width="100%" height="100%" fill="#ffffff"/>',
               f'<text x="4" y="14">{escape(self._heading())}</text>']
        scale = WIDTH / self.total if self.total else 0
        self._box(out, "all keys", self.total, NEUTRAL, 0.0, WIDTH, 1)
        self._children(out, children, (), 0.0, scale, 2)
        x, y = 4, height - 14
        for name, colour in (*COLOURS.items(), ("other", OTHER)):  # the legend
            out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colour}"/>'
                       f'<text x="{x + 14}" y="{y + 9}">{name}</text>')
            x += 24 + int(len(name) * CHAR_PX)
        out.append("</svg>")
        return "\n".join(out) + "\n"

    def _heading(self) -> str:
        text = f"memory by prefix: {self.total:,} bytes; width by memory, colour by type"
        if self.pruned:
            text += f" ({self.pruned:,} light prefixes pruned)"
        return text

    def _children(self, out: list, children: dict, path: tuple, x: float, scale: float, level: int) -> None:
        kids = sorted(children.get(path, ()), key=lambda p: -self.nodes[p][0])
        if not kids:
            return
        parent = self.total if not path else self.nodes[path][0]
        drawn = 0
        for kid in kids:
            memory, types = self.nodes[kid]
            w = memory * scale
            if w < MIN_BOX or drawn + memory > parent:
                continue
            colour = NEUTRAL if len(kid) == 1 else COLOURS.get(max(types, key=types.get), NEUTRAL)
            self._box(out, self._name(kid), memory, colour, x, w, level)
            self._children(out, children, kid, x, scale, level + 1)
            x += w
            drawn += memory
        if parent - drawn > 0 and (parent - drawn) * scale > 0:
            self._box(out, f"other under {self._name(path) if path else 'all keys'}", parent - drawn, OTHER, x,
                      (parent - drawn) * scale, level)

    @staticmethod
    def _name(path: tuple) -> str:
        if len(path) == 1:
            return f"db {path[0]}"
        last = path[-1]
        return key_text(last[0]) if isinstance(last, tuple) else key_text(last)

    def _box(self, out: list, name: str, memory: int, colour: str, x: float, w: float, level: int) -> None:
        share = 100 * memory / self.total if self.total else 0
        y = 10 + level * ROW
        tip = safe(f"{name}: {memory:,} bytes, {share:.2f}%")
        out.append(f'<g><title>{escape(tip)}</title><rect x="{x:.3f}" y="{y}" width="{w:.3f}" '
                   f'height="{ROW - 1}" fill="{colour}" stroke="#ffffff" stroke-width="0.5"/>')
        if w >= LABEL_BOX:
            room = int((w - 4) / CHAR_PX)
            label = safe(name)
            label = label if len(label) <= room else label[:max(room - 1, 1)] + "…"
            out.append(f'<text x="{x + 2:.3f}" y="{y + ROW - 5}">{escape(label)}</text>')
        out.append("</g>")

