"""pylance's ``lance._dataset``: dataset helpers outside the main API
(:mod:`lancenb._dataset.sharded_batch_iterator`)."""
