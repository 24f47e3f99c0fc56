"""Task groups: a whole delivery (plan, extract, gate, publish) in one call."""
