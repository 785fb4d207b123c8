"""A report of one job for people, with its figures."""
