"""A coding agent's plan (``ExitPlanMode``) as safe HTML: the one place Markdown becomes a page's.

markdown-it-py in its CommonMark configuration with raw HTML off: a ``<script>`` or any other tag
in the plan is shown as text. Links keep only ``http``, ``https`` and ``mailto`` addresses (never
``javascript:``, ``data:`` or ``vbscript:``) and open apart from the page; an image becomes a link
to where it points, so the page fetches nothing the agent names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

SAFE_SCHEMES = ("http://", "https://", "mailto:")


def _safe_link(url: str) -> bool:
    return url.strip().lower().startswith(SAFE_SCHEMES)


def _image_as_link(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """An image is never fetched: its alt text, linked to its address when that is a safe one."""
    token = tokens[idx]
    alt = renderer.renderInlineAsText(token.children or [], options, env) or str(token.attrGet("src") or "")
    text = escapeHtml(alt)
    src = str(token.attrGet("src") or "")
    if not _safe_link(src):
        return text
    return f'<a href="{escapeHtml(src)}" rel="noopener noreferrer nofollow" target="_blank">{text}</a>'


def _link_open(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    tokens[idx].attrSet("target", "_blank")
    return renderer.renderToken(tokens, idx, options, env)


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").enable("strikethrough")
    md.validateLink = _safe_link  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("link_open", _link_open)
    return md


MARKDOWN = _markdown()


def plan_html(text: Any) -> SafeString:
    """The plan's Markdown as HTML that runs nothing and fetches nothing."""
    rendered: str = MARKDOWN.render(str(text or ""))
    return mark_safe(rendered)  # html off, links checked, images as links: nothing in it runs or fetches
