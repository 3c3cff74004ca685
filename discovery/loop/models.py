"""Typed state of a book's discovery loop (seed 002, LOOP.md)."""
