"""Foreign formats in one place: traces from other systems, and proctor's runs for them.

Importing recorded sessions (OpenAI chat logs, OpenTelemetry GenAI and OpenInference
spans) and grading them against tasks, replaying an agent on them, exporting runs as
OpenTelemetry spans, and redacting what is stored or exported.
"""
