"""Jobs side by side with one similarity score."""
