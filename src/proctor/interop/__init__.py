"""Other tools' formats, recorded traces aside (those are `proctor.traces`'s): runs
exported as OpenTelemetry spans, redaction of what is stored or exported, and task
sets of other tools (ADK, tau2, the course's cases) written as task files.
"""
