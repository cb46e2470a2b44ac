"""The Lance table format: datasets with versions, fragments, transactions and deletions."""
