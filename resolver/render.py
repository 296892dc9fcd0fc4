"""Exact rendering (SPEC §6): item blocks, reference lines and the output's length arithmetic.

Admission needs the length of the complete output after each unit; the formats are additive,
so ``OutputMeter`` tracks it with one addition per unit instead of re-rendering.
"""

from resolver.text import escape_attr, escape_text

MD_REFS_HEADER = "## Available on request"


def marker_text(detail: str) -> str:
    return f"Not current ({detail}): do not present it as current."


class Renderer:
    """Render pieces of one output format."""

    def __init__(self, fmt: str):
        self.format = fmt
        self.xml = fmt == "xml"

    def item(
        self,
        *,
        ref: str,
        title: str,
        date: tuple[str, str] | None,
        not_current: str | None,
        texts: list[str],
    ) -> str:
        """Return one item block; ``date`` is (field, day) when shown, texts are non-empty."""
        if self.xml:
            head = f'<item ref="{escape_attr(ref)}" title="{escape_attr(title)}"'
            if date is not None:
                head += f' {date[0]}="{date[1]}"'
            if not_current is not None:
                head += f' not-current="{escape_attr(not_current)}"'
            if not texts:
                return head + "/>"
            return head + ">\n" + "\n\n".join(escape_text(t) for t in texts) + "\n</item>"
        block = "### " + title
        if date is not None:
            block += f" ({date[0]} {date[1]})"
        if not_current is not None:
            block += "\n" + marker_text(not_current)
        if texts:
            block += "\n" + "\n\n".join(texts)
        return block

    def reference(self, *, ref: str, title: str) -> str:
        if self.xml:
            return f'<ref id="{escape_attr(ref)}" title="{escape_attr(title)}"/>'
        return f"- {title} (ref: {ref})"

    def layer_head(self, key: str, name: str) -> str:
        if self.xml:
            return f'<layer key="{escape_attr(key)}" name="{escape_attr(name)}">'
        return f"## {name}"

    # -- lengths ---------------------------------------------------------------------------

    def layer_block(self, head: str, blocks: list[str]) -> str:
        if self.xml:
            return head + "\n" + "".join(b + "\n" for b in blocks) + "</layer>"
        return head + "\n\n" + "\n\n".join(blocks)

    def output(self, layer_blocks: list[str], reference_lines: list[str]) -> str:
        """Assemble the complete output text ("" when nothing was admitted)."""
        if not layer_blocks and not reference_lines:
            return ""
        if self.xml:
            parts = ["<context>", *layer_blocks]
            if reference_lines:
                parts += ["<references>", *reference_lines, "</references>"]
            parts.append("</context>")
            return "\n".join(parts) + "\n"
        blocks = list(layer_blocks)
        if reference_lines:
            blocks.append(MD_REFS_HEADER + "\n" + "\n".join(reference_lines))
        return "\n\n".join(blocks) + "\n"


class OutputMeter:
    """Track the length of the complete output as units are admitted one by one."""

    def __init__(self, renderer: Renderer):
        self.xml = renderer.xml
        self.length = 0
        self.blocks = 0
        self.references = 0

    def _open(self) -> int:
        """Extra characters when the first piece of all is added."""
        if self.length:
            return 0
        return len("<context>\n</context>\n") if self.xml else 1  # final newline

    def cost_item(self, head_length: int, items_in_layer: int, item_length: int) -> int:
        if self.xml:
            if items_in_layer == 0:
                return self._open() + head_length + 1 + len("</layer>\n") + item_length + 1
            return item_length + 1
        if items_in_layer == 0:
            separator = 2 if self.blocks else 0
            return self._open() + separator + head_length + 2 + item_length
        return item_length + 2

    def cost_reference(self, line_length: int) -> int:
        if self.xml:
            if self.references == 0:
                opened = len("<references>\n") + len("</references>\n")
                return self._open() + opened + line_length + 1
            return line_length + 1
        if self.references == 0:
            separator = 2 if self.blocks else 0
            return self._open() + separator + len(MD_REFS_HEADER) + 1 + line_length
        return line_length + 1

    def add_item(self, cost: int, items_in_layer: int) -> None:
        self.length += cost
        if items_in_layer == 0:
            self.blocks += 1

    def add_reference(self, cost: int) -> None:
        self.add_references(1, cost)

    def add_references(self, count: int, cost: int) -> None:
        """Add ``count`` reference lines whose costs (``cost_reference`` each) sum to ``cost``."""
        self.length += cost
        if self.references == 0:
            self.blocks += 1
        self.references += count
