"""Triggers: ClaimsTrigger, the deferrable half of ClaimsSensor."""
