"""Reports: terminal now; HTML, Markdown and JUnit build on the same RunSummary."""
