"""Text from specs and results, made safe to place in Markdown: a name like ``t<script>`` or
``a|b`` reads as itself, never as HTML, emphasis or a table's column break."""

from __future__ import annotations

import html
import re

__all__ = ["md_escape"]

_SPECIAL = re.compile(r"([\\`*_\[\]|#])")


def md_escape(text: object) -> str:
    """``text`` as Markdown that renders to exactly it: HTML's ``& < >`` as entities, and
    Markdown's punctuation (backslash, backtick, ``* _ [ ] | #``) backslash-escaped."""
    return _SPECIAL.sub(r"\\\1", html.escape(str(text), quote=False))
