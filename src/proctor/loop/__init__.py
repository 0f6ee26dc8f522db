"""The loop from production back into the suite: promote, monitor, the program's own figures."""
