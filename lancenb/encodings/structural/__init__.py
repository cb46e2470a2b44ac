"""Structural page layouts (mini-block, full-zip, all-null): how chunks become pages."""
