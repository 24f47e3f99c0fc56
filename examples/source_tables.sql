-- The source system of dags/examples/, in SQLite: the five tables their docstrings declare.
-- examples/demo.py starts from it, and so does the real-scheduler test layer (tests/deployment).
-- Superseded by source_tables.sqlite.sql (every table the examples read, the contract files'
-- too) and source_tables.postgresql.sql; kept until those two read the new file.
PRAGMA journal_mode = WAL;
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer TEXT, amount_cents INTEGER,
                     updated_at DATETIME NOT NULL, is_deleted BOOLEAN NOT NULL);
CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY, customer TEXT,
                       updated_at DATETIME NOT NULL, is_deleted BOOLEAN NOT NULL);
CREATE TABLE invoice_lines (line_id INTEGER PRIMARY KEY, invoice_id INTEGER NOT NULL,
                            amount_cents INTEGER NOT NULL);
CREATE TABLE events (kind TEXT NOT NULL, payload TEXT, recorded_at DATETIME NOT NULL);
CREATE TABLE shipments (shipment_id INTEGER PRIMARY KEY, ship_date DATE NOT NULL,
                        weight_g INTEGER, updated_at DATETIME NOT NULL);
