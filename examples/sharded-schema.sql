-- The sharded demo's logical tables (scripts/demo.sh). Every unique key of
-- a sharded table holds its shard key: uniqueness is kept per sub-table.
-- The sharding itself is in the demo's configuration (schemas:):
--   customers  hash on id, 2 shards x 4 sub-tables
--   orders     like customers, on customer_id (a customer's orders live
--              on the customer's sub-table number: joins stay on one server)
--   products   reference: a full copy on every shard
-- scripts/demo.sh runs this file through shardgate, in database shop: each
-- CREATE TABLE fans out to the sub-tables, on the shards holding them.

CREATE TABLE customers (
  id         INT UNSIGNED NOT NULL PRIMARY KEY,
  name       VARCHAR(100) NOT NULL,
  email      VARCHAR(255) NOT NULL,
  country    CHAR(2)      NOT NULL,
  created_at DATETIME     NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

CREATE TABLE orders (
  id          INT UNSIGNED  NOT NULL,
  customer_id INT UNSIGNED  NOT NULL,
  product_id  INT UNSIGNED  NOT NULL,
  quantity    INT UNSIGNED  NOT NULL,
  unit_price  DECIMAL(10,2) NOT NULL,
  status      ENUM('pending','paid','shipped','delivered','cancelled') NOT NULL DEFAULT 'pending',
  ordered_at  DATETIME      NOT NULL,
  PRIMARY KEY (customer_id, id),
  KEY idx_orders_product (product_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

CREATE TABLE products (
  id       INT UNSIGNED  NOT NULL PRIMARY KEY,
  sku      VARCHAR(32)   NOT NULL,
  name     VARCHAR(200)  NOT NULL,
  price    DECIMAL(10,2) NOT NULL,
  stock    INT UNSIGNED  NOT NULL DEFAULT 0,
  UNIQUE KEY uk_products_sku (sku)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
