"""Output: tables rendered as text/CSV/JSON/Markdown, figures, files written atomically, and
the scenario runner that ties them together."""
