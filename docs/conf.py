"""Sphinx configuration of the documentation in docs/: Markdown pages read by myst-parser.

Built by `python3 dev.py test` with warnings as errors and nitpicky references, so a broken link
between pages, a missing heading anchor or a literalinclude of a moved file fails CI.
"""

project = "airflow-provider-dogana"
author = "the dogana authors"
copyright = "the dogana authors"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# GitHub-style anchors for headings down to ###, so `page.md#a-heading` links are checked.
myst_heading_anchors = 3

# The built-in theme: no extra dependency to install or pin.
html_theme = "alabaster"
html_title = "airflow-provider-dogana"
# No intersphinx and no linkcheck: CI builds without a network, and the links checked are the
# pages' own.
