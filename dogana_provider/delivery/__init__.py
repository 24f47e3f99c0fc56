"""Delivered files between the extract and the gate: the files themselves, read and written in
record batches and hashed while streaming (files.py), and the folder where they wait
(folders.py)."""
