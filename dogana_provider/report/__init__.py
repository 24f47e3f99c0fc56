"""What dogana prints for a person: a receiver's status, held deliveries, and the one table
layout every command and task log uses."""
