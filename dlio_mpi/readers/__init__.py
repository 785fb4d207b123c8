"""How a rank reads its batches: access patterns, the reader protocol, the readers, read-ahead, the
files a reader keeps open."""
