"""Make a Great Expectations Data Docs site open offline.

Its pages load bootstrap, jQuery, font-awesome and vega from CDNs and the logo from S3;
without internet they render badly, and the index (a table jQuery builds from data in a
script) blank. Our pages must need nothing from outside, so every page keeps only its
server-rendered HTML, with a small stylesheet of our own.
"""

from __future__ import annotations

from html import escape
from html.parser import HTMLParser
from pathlib import Path

STYLE = """<style>
body { font: 15px/1.45 system-ui, sans-serif; color: #222; max-width: 72rem;
  margin: 0 auto; padding: 1rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { border: 1px solid #bbb; padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
h4, h5, h6 { margin: 1rem 0 .3rem; }
h5 { font-size: 1.15rem; border-bottom: 2px solid #ccc; }
.badge { background: #eee; border-radius: 3px; padding: 0 .3em; font-family: monospace; }
.fa-check-circle::before { content: "\\2714"; color: #1a7f37; }
.fa-times::before { content: "\\2718"; color: #c62828; }
.fa-exclamation-triangle::before { content: "\\26A0"; color: #b26a00; }
.cooltip .top { display: block; font-size: .85em; color: #555; }
.navbar { height: auto !important; }
nav ul, nav ol { display: flex; flex-wrap: wrap; gap: .2rem 1rem; list-style: none; padding: 0; }
pre, code { white-space: pre-wrap; word-break: break-all; }
button, footer, a[data-toggle="collapse"], .card:has(.btn-group-toggle) { display: none; }
@media print { body { max-width: none; } a { color: inherit; } tr { break-inside: avoid; } }
</style>
"""


def _external(url: str | None) -> bool:
    return (url or "").strip().lower().startswith(("http://", "https://", "//"))


class _Offline(HTMLParser):
    """Re-emits a page as parsed, minus scripts, styles and external links and images.

    Every script there drives a library fetched from a CDN, and the page's own style is
    written for bootstrap (and fetches a logo), so both go; `STYLE` replaces them."""

    def __init__(self, index_links: str):
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self.index_links = index_links  # put before the first table: the index's is empty
        self.skipping = None  # "script" or "style" while inside one
        self.unlinked = False  # inside an <a> whose href is external

    def handle_starttag(self, tag, attrs):
        attr = dict(attrs)
        if tag in ("script", "style"):
            self.skipping = tag
        elif tag == "a" and _external(attr.get("href")):
            self.unlinked = True
        elif not (tag in ("link", "img") and _external(attr.get("href") or attr.get("src"))):
            if tag == "table":
                self.out.append(self.index_links)
                self.index_links = ""
            self.out.append(self.get_starttag_text())

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == self.skipping:
            self.skipping = None
        elif tag == "a" and self.unlinked:
            self.unlinked = False
        else:
            self.out.append((STYLE if tag == "head" else "") + f"</{tag}>")

    def handle_data(self, data):
        if not self.skipping:
            self.out.append(data)

    def handle_entityref(self, name):
        self.out.append(f"&{name};")

    def handle_charref(self, name):
        self.out.append(f"&#{name};")

    def handle_comment(self, data):
        self.out.append(f"<!--{data}-->")

    def handle_decl(self, decl):
        self.out.append(f"<!{decl}>")


def make_offline(site_dir: str) -> None:
    """Rewrite every page of the Data Docs site in `site_dir` to need nothing from outside;
    the index also gets plain links to the site's other pages, which it showed only
    through JavaScript."""
    site = Path(site_dir)
    pages = sorted(site.rglob("*.html"))
    index = site / "index.html"
    links = "".join(
        f'<li><a href="{escape(page.relative_to(site).as_posix())}">'
        f"{escape(page.relative_to(site).with_suffix('').as_posix())}</a></li>"
        for page in pages
        if page != index
    )
    for page in pages:
        parser = _Offline(f"<ul>{links}</ul>" if page == index else "")
        parser.feed(page.read_text(encoding="utf-8"))
        parser.close()
        page.write_text("".join(parser.out), encoding="utf-8")
