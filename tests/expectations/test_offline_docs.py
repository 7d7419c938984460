"""A page rewritten by `offline_docs` keeps its content and loses whatever it fetched."""

from __future__ import annotations

from expectations.offline_docs import make_offline

PAGE = """<!DOCTYPE html><html><head>
<link rel="stylesheet" href="https://maxcdn.bootstrapcdn.com/bootstrap.min.css"/>
<link rel="stylesheet" href="//cdn.example/table.css">
<link rel="shortcut icon" href="./static/favicon.ico"/>
<style>a { background: url('https://bucket.s3.amazonaws.com/logo.png') }</style>
<script src="https://code.jquery.com/jquery.min.js"></script>
</head><body>
<img src="https://bucket.s3.amazonaws.com/logo.png" alt="logo"><img src="static/chart.png">
<p>Made with <a href="https://greatexpectations.io"><b>Great Expectations</b></a> &amp; care.</p>
<script>$('#t').bootstrapTable({data: []});</script>
<table id="t"><tr><td>4681 &lt; 4682</td></tr></table>
<a href="suite.html">suite</a>
</body></html>
"""


def test_pages_keep_their_content_and_fetch_nothing(tmp_path):
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "validations").mkdir()
    (tmp_path / "validations" / "run.html").write_text(PAGE)

    make_offline(str(tmp_path))

    index = (tmp_path / "index.html").read_text()
    run = (tmp_path / "validations" / "run.html").read_text()
    for text in (index, run):
        assert [ref for ref in ("http", "//cdn", "<script", "url(") if ref in text] == []
        assert "<p>Made with <b>Great Expectations</b> &amp; care.</p>" in text
        assert "<td>4681 &lt; 4682</td>" in text and '<a href="suite.html">suite</a>' in text
        assert 'href="./static/favicon.ico"' in text and '<img src="static/chart.png">' in text
        assert text.count("<style>") == 1 and "border-collapse" in text
    assert '<ul><li><a href="validations/run.html">validations/run</a></li></ul><table' in index
    assert "<ul>" not in run
