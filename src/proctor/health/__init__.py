"""Tests of the tests: mutation testing (`mutate`) and nondeterministic tasks (`flaky`)."""
