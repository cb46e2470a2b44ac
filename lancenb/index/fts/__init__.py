"""Full-text search: the INVERTED index in pylance's format (tokenizers, posting
lists, BM25) and ``full_text_query`` scans."""
