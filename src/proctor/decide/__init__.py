"""The decision layer: run summaries, the scorecard, comparisons and gates, on the
formulas of `proctor.stats`."""
