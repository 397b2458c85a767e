"""Local state that survives a kill: journals and snapshots written so that a torn write
is detected (:mod:`~crawler.state.persistence`), the lock that keeps two crawls out of one
state directory (:mod:`~crawler.state.lock`), and which processes hold a file open
(:mod:`~crawler.state.open_files`). Imports nothing of the package above it."""
