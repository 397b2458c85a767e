"""Real crawls of the demo sites: resume after kills, many workers, hostile pages, better copies."""
