"""Output: tables rendered as text/CSV/JSON/Markdown, figures and reports, and files written
atomically."""
