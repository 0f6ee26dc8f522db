"""The decision layer: statistics, run summaries, the scorecard, comparisons and gates."""
