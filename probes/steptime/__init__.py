"""steptime."""
