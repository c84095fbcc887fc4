"""Ranking: the files a request matches, ordered by how much a focus text needs them
(full-text relevance, names, references, recency), from indexes kept warm per root."""
