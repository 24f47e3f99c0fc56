"""Operators: plan a delivery, extract it, gate it, publish it."""
