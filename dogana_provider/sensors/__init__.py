"""Sensors: ClaimsSensor waits for what a table or group claims."""
