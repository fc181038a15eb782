"""A griffe extension for the documentation site: the docstrings introduce code blocks the
reStructuredText way, with a paragraph ending in ``::``; Markdown shows the indented block as
code already, so the paragraph keeps one colon instead of printing two."""

import re

import griffe

# "...like this::" then a blank line and an indented block: keep "like this:"
_LITERAL_BLOCK = re.compile(r"(?<=\S)::[ \t]*\n(?=[ \t]*\n[ \t]+\S)")


class LiteralBlocks(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _LITERAL_BLOCK.sub(":\n", obj.docstring.value)
