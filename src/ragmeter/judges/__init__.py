"""ragmeter.judges."""
