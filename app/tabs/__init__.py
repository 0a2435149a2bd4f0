"""One module per station; each has TITLE, KEY (deep-link name) and build()."""
