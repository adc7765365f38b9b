"""The report: scanning every transcript (forked workers, per-file cache), tallying spend and channels, the summary and the API's report answers."""
