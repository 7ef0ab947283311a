"""A blob's text as highlighted HTML for the repository browser, by Pygments: the lexer chosen by the
file's name (plain text when Pygments knows none), token classes only (no inline style: the
dashboard's Content-Security-Policy allows svc's /static only; the colours are web/static/repos.css)."""

from __future__ import annotations

import asyncio

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

# Classes, never style attributes: what the CSP allows.
_FORMATTER = HtmlFormatter(nowrap=False, cssclass="highlight")


def lexer_for(path: str) -> Lexer:
    """By the file's name ("svc.json", "assets/app.js"); plain text for a name Pygments does not know."""
    name = path.rsplit("/", 1)[-1]
    try:
        found: Lexer = get_lexer_for_filename(name, stripnl=False)
    except ClassNotFound:
        found = TextLexer(stripnl=False)
    return found


def language(path: str) -> str:
    """The lexer's name for a person ("Python", "JSON", "Text only")."""
    return str(lexer_for(path).name)


def _html(path: str, content: str) -> Markup:
    html = str(highlight(content, lexer_for(path), _FORMATTER))
    # Safe to mark: this is Pygments' HtmlFormatter output, in which every character of the file's
    # content was escaped by Pygments itself ("<", ">", "&", quotes) and wrapped in <span class="...">
    # tokens; nothing of the file reaches the page unescaped, and the markup has no style attribute.
    return Markup(html)  # noqa: S704 - see the comment above


async def highlighted(path: str, content: str) -> Markup:
    """Up to a 1 MiB blob (the node's limit): lexed in a thread, so a large file does not hold the
    event loop of every other request."""
    return await asyncio.to_thread(_html, path, content)
