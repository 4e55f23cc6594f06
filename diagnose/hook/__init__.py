"""In-process hook (standard library only)."""
