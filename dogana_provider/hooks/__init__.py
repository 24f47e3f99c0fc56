"""Hooks: DoganaHook, the receiver behind a connection; sql_hook, a connection's own SQL hook."""
