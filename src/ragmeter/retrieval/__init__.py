"""ragmeter.retrieval."""
