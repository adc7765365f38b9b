"""What each engine is handed, and the making of engines: prices, the o200k token counter and its
set-up (`tokenizer`, `o200k_count`), calibration of the token ratio, the path-existence rule
(`fsprobe`); `engines` builds a session engine and replays a transcript with it."""
