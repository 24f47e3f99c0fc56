-- The source system every example reads, in PostgreSQL: the quickstart's customers, the tables
-- of dags/examples/*.py (as their docstrings declare them) and the eleven tables of the contract
-- files in dags/examples/contracts/. source_tables.sqlite.sql is the same tables on SQLite;
-- tests/test_example_ddl.py runs both and checks every column the examples declare.
--
-- The tables go to the first schema of the search_path; run it as
--   psql -v ON_ERROR_STOP=1 -d shop -f examples/source_tables.postgresql.sql
-- Cursor columns are TIMESTAMP WITH TIME ZONE, moved by every change in the same UPDATE.

-- examples/quickstart.py, and the contract customers.odcs.yaml
CREATE TABLE customers (
    customer_id BIGINT PRIMARY KEY,
    name        TEXT,
    country     TEXT
);

-- dags/examples/orders.py, and the contract orders.json
CREATE TABLE orders (
    order_id     BIGINT PRIMARY KEY,
    customer     TEXT,
    amount_cents BIGINT,
    updated_at   TIMESTAMP WITH TIME ZONE NOT NULL,   -- moved by every change
    is_deleted   BOOLEAN NOT NULL DEFAULT FALSE       -- the soft-delete flag
);

-- dags/examples/invoices.py reports by customer; the contract billing.odcs.yaml declares
-- customer_id and reads only the columns it declares. One table serves both.
CREATE TABLE invoices (
    invoice_id  BIGINT PRIMARY KEY,
    customer    TEXT,
    customer_id BIGINT,
    updated_at  TIMESTAMP WITH TIME ZONE NOT NULL,
    is_deleted  BOOLEAN NOT NULL DEFAULT FALSE       -- cancelling an invoice sets the flag
);
CREATE TABLE invoice_lines (
    line_id      BIGINT PRIMARY KEY,
    invoice_id   BIGINT NOT NULL,
    amount_cents BIGINT NOT NULL
);

-- dags/examples/events.py: keyless, append-only
CREATE TABLE events (
    kind        TEXT NOT NULL,
    payload     TEXT,
    recorded_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now()   -- stamped at insert
);

-- dags/examples/shipments.py: ship_date is set once and never changed
CREATE TABLE shipments (
    shipment_id BIGINT PRIMARY KEY,
    ship_date   DATE NOT NULL,
    weight_g    BIGINT,
    updated_at  TIMESTAMP WITH TIME ZONE NOT NULL
);

-- The rest of the contract files in dags/examples/contracts/
CREATE TABLE regions (
    region_code VARCHAR(16) PRIMARY KEY,
    label       TEXT
);
CREATE TABLE products (
    product_id  BIGINT PRIMARY KEY,
    title       TEXT,
    price_cents BIGINT,
    updated_at  TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE TABLE payments (
    payment_id   BIGINT PRIMARY KEY,
    order_id     BIGINT,
    amount_cents BIGINT,
    updated_at   TIMESTAMP WITH TIME ZONE NOT NULL,
    is_deleted   BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE TABLE stock_levels (
    product_id BIGINT NOT NULL,
    warehouse  VARCHAR(16) NOT NULL,
    quantity   BIGINT,
    PRIMARY KEY (warehouse, product_id)
);
CREATE TABLE page_views (
    path      TEXT,
    visitor   TEXT,
    viewed_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now()
);
CREATE TABLE suppliers (
    supplier_id BIGINT PRIMARY KEY,
    name        TEXT
);
CREATE TABLE audit_log (
    action    TEXT,
    logged_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now()
);
