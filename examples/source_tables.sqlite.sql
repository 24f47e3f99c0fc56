-- The source system every example reads, in SQLite: the quickstart's customers, the tables of
-- dags/examples/*.py (their docstrings give the PostgreSQL spelling) and the eleven tables of the
-- contract files in dags/examples/contracts/. source_tables.postgresql.sql is the same tables on
-- PostgreSQL; tests/test_example_ddl.py runs both and checks every column the examples declare.
--
-- SQLite stores datetimes as text: write them in UTC (ISO 8601), as dogana reads them.
PRAGMA journal_mode = WAL;

-- examples/quickstart.py, and the contract customers.odcs.yaml
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT, country TEXT);

-- dags/examples/orders.py, and the contract orders.json
CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer TEXT, amount_cents INTEGER,
                     updated_at DATETIME NOT NULL, is_deleted BOOLEAN NOT NULL DEFAULT 0);

-- dags/examples/invoices.py reports by customer; the contract billing.odcs.yaml declares
-- customer_id and reads only the columns it declares. One table serves both.
CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY, customer TEXT, customer_id INTEGER,
                       updated_at DATETIME NOT NULL, is_deleted BOOLEAN NOT NULL DEFAULT 0);
CREATE TABLE invoice_lines (line_id INTEGER PRIMARY KEY, invoice_id INTEGER NOT NULL,
                            amount_cents INTEGER NOT NULL);

-- dags/examples/events.py: keyless, append-only
CREATE TABLE events (kind TEXT NOT NULL, payload TEXT, recorded_at DATETIME NOT NULL);

-- dags/examples/shipments.py: ship_date is set once and never changed
CREATE TABLE shipments (shipment_id INTEGER PRIMARY KEY, ship_date DATE NOT NULL,
                        weight_g INTEGER, updated_at DATETIME NOT NULL);

-- The rest of the contract files in dags/examples/contracts/
CREATE TABLE regions (region_code TEXT PRIMARY KEY, label TEXT);
CREATE TABLE products (product_id INTEGER PRIMARY KEY, title TEXT, price_cents INTEGER,
                       updated_at DATETIME NOT NULL);
CREATE TABLE payments (payment_id INTEGER PRIMARY KEY, order_id INTEGER, amount_cents INTEGER,
                       updated_at DATETIME NOT NULL, is_deleted BOOLEAN NOT NULL DEFAULT 0);
CREATE TABLE stock_levels (product_id INTEGER NOT NULL, warehouse TEXT NOT NULL,
                           quantity INTEGER, PRIMARY KEY (warehouse, product_id));
CREATE TABLE page_views (path TEXT, visitor TEXT, viewed_at DATETIME NOT NULL);
CREATE TABLE suppliers (supplier_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE audit_log (action TEXT, logged_at DATETIME NOT NULL);
