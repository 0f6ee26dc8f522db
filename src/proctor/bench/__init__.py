"""Peer benchmarks run inside proctor's gateway, their verdicts beside proctor's own.

A benchmark here is a suite source (env/sources.py) building the benchmark's tasks, a
domain whose tools are the benchmark's own, checks that compute the benchmark's verdict,
and reference agents that show both agree (docs/architecture.md, Where to add).
"""
