"""Located field tree of a decoded message, for tables and diagrams."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....messages.layout import Field
from .header import HEADER_SIZE, absent_fields, header_layout

if TYPE_CHECKING:
    from .frame import Message

SECTION_LABELS = {
    "framing_extras": "Framing extras",
    "extras": "Extras",
    "engine_specific": "Engine specific",
    "key": "Key",
    "value": "Value",
}


def describe(msg: "Message") -> list[Field]:
    """Header fields, then one group per body section, all with absolute offsets."""
    layout = header_layout(msg.magic)
    head = msg.data if len(msg.data) >= HEADER_SIZE else msg.data + bytes(HEADER_SIZE - len(msg.data))
    out = layout.describe(head, 0, msg.offset)
    if len(msg.data) < HEADER_SIZE:  # the bytes a cut frame lacks are shown absent, not as zeros
        absent = absent_fields(msg.magic, len(msg.data))
        out = [f if f.name not in absent else
               Field(f.name, f.label, f.offset, f.size, None,
                     f"absent ({absent[f.name]} of {f.size} bytes)" if absent[f.name] else "absent")
               for f in out]
    for section in msg.sections:
        if section.size == 0 and not section.fields:
            continue
        children: tuple[Field, ...]
        if section.name == "framing_extras":
            children = tuple(
                Field(f"frame_info.{fi['name']}", _frame_info_label(fi), fi["offset"], fi["size"], fi.get("value"),
                      _frame_info_display(fi))
                for fi in msg.frame_infos
            )
        elif section.layout is not None and not section.fields:
            rel = section.offset - msg.offset
            children = tuple(section.layout.describe(msg.data, rel, section.offset))
        else:
            children = tuple(section.fields)
        if section.name in ("key", "value") and len(children) == 1 and children[0].offset == section.offset \
                and children[0].size == section.size:
            out.append(children[0])
            continue
        out.append(Field(section.name, SECTION_LABELS[section.name], section.offset, section.size, None,
                         f"{section.size} bytes", children))
    return out


def _frame_info_label(fi: dict) -> str:
    return str(fi.get("name", fi.get("id"))).replace("_", " ").capitalize()


def _frame_info_display(fi: dict) -> str:
    text = f"id {fi['id']}: {fi.get('value')!s}"
    if fi.get("problem"):
        text += f" [{fi['problem']}]"
    return text

