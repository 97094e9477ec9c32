"""Personal data out before any judge call: detectors of Russian and English identifiers and
names, a pseudonymiser with consistent, reversible tokens, and a judge wrapper that applies it
to every request."""
