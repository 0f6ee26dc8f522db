"""Recorded traces, beside the run: trace files of other systems read into sessions
(OpenAI chat logs, OpenTelemetry GenAI and OpenInference spans, Inspect AI logs),
checked in one place, graded against a suite's tasks and stored as a run, and replayed
(docs/architecture.md, Packages).
"""
