-- Sample data for the sharded demo (scripts/demo.sh), loaded THROUGH
-- shardgate into the sharded schema `shop`: customers and orders are hash-
-- sharded on the customer id (2 shards x 4 sub-tables), products is a
-- reference table copied to every shard. The tables are made by
-- examples/sharded-schema.sql.
--
-- Customers and orders go in one row per INSERT: shardgate places each
-- row on its sub-table by its key.

SET NAMES utf8mb4;

-- A reference table: every shard gets every row.
INSERT INTO products (id, sku, name, price, stock) VALUES
  (1,  'KB-001', 'Mechanical keyboard',        89.90, 120),
  (2,  'MS-002', 'Wireless mouse',             29.50, 340),
  (3,  'MN-003', '27" monitor',               249.00,  45),
  (4,  'HD-004', 'USB-C hub',                  39.99, 210),
  (5,  'HP-005', 'Noise-cancelling headphones', 179.00, 60),
  (6,  'WC-006', 'HD webcam',                  59.00,  95),
  (7,  'SD-007', 'Standing desk',             399.00,  12),
  (8,  'CH-008', 'Ergonomic chair',           289.00,  20),
  (9,  'LP-009', 'Laptop stand',               34.90, 150),
  (10, 'CB-010', 'Cable organiser',             9.90, 500),
  (11, 'SS-011', '1 TB SSD',                   79.00, 130),
  (12, 'RM-012', '32 GB RAM kit',             109.00,  70),
  (13, 'MP-013', 'Large mouse pad',            14.90, 260),
  (14, 'DL-014', 'Desk lamp',                  44.00,  80),
  (15, 'SP-015', 'Bluetooth speaker',          69.00,  55),
  (16, 'MC-016', 'USB microphone',            119.00,  35),
  (17, 'PB-017', 'Power bank',                 49.00, 180),
  (18, 'EC-018', 'Ethernet cable 5 m',          7.50, 400),
  (19, 'DS-019', 'Docking station',           199.00,  25),
  (20, 'TB-020', 'Drawing tablet',            149.00,  30);

INSERT INTO customers (id, name, email, country, created_at) VALUES (1, 'Ada Lovelace', 'ada@example.com', 'GB', '2024-01-03 09:12:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (2, 'Alan Turing', 'alan@example.com', 'GB', '2024-01-05 14:30:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (3, 'Grace Hopper', 'grace@example.com', 'US', '2024-01-09 08:45:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (4, 'Edsger Dijkstra', 'edsger@example.com', 'NL', '2024-01-15 17:02:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (5, 'Barbara Liskov', 'barbara@example.com', 'US', '2024-01-22 11:20:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (6, 'Donald Knuth', 'donald@example.com', 'US', '2024-02-01 10:00:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (7, 'Margaret Hamilton', 'margaret@example.com', 'US', '2024-02-07 13:41:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (8, 'Niklaus Wirth', 'niklaus@example.com', 'CH', '2024-02-12 16:05:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (9, 'Frances Allen', 'frances@example.com', 'US', '2024-02-20 09:55:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (10, 'Tony Hoare', 'tony@example.com', 'GB', '2024-03-02 12:12:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (11, 'Radia Perlman', 'radia@example.com', 'US', '2024-03-08 15:30:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (12, 'Ken Thompson', 'ken@example.com', 'US', '2024-03-14 08:08:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (13, 'Sophie Wilson', 'sophie@example.com', 'GB', '2024-03-21 19:45:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (14, 'Bjarne Stroustrup', 'bjarne@example.com', 'DK', '2024-04-01 07:30:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (15, 'Karen Spärck Jones', 'karen@example.com', 'GB', '2024-04-10 10:10:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (16, 'Linus Torvalds', 'linus@example.com', 'FI', '2024-04-18 22:00:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (17, 'Hedy Lamarr', 'hedy@example.com', 'AT', '2024-05-02 14:14:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (18, 'Monty Widenius', 'monty@example.com', 'FI', '2024-05-09 09:00:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (19, 'Shafi Goldwasser', 'shafi@example.com', 'US', '2024-05-20 11:11:00');
INSERT INTO customers (id, name, email, country, created_at) VALUES (20, 'Leslie Lamport', 'leslie@example.com', 'US', '2024-06-01 16:40:00');

INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (1, 1, 1, 1, 89.90, 'delivered', '2024-06-02 10:00:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (2, 1, 2, 2, 29.50, 'delivered', '2024-06-02 10:00:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (3, 2, 3, 1, 249.00, 'shipped', '2024-06-03 12:30:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (4, 3, 5, 1, 179.00, 'paid', '2024-06-04 09:15:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (5, 4, 7, 1, 399.00, 'delivered', '2024-06-05 17:45:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (6, 5, 11, 2, 79.00, 'shipped', '2024-06-06 08:20:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (7, 6, 12, 1, 109.00, 'paid', '2024-06-07 11:11:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (8, 7, 4, 3, 39.99, 'pending', '2024-06-08 14:00:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (9, 8, 9, 1, 34.90, 'delivered', '2024-06-09 16:30:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (10, 9, 10, 5, 9.90, 'cancelled', '2024-06-10 10:05:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (11, 10, 6, 1, 59.00, 'delivered', '2024-06-11 13:13:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (12, 11, 19, 1, 199.00, 'shipped', '2024-06-12 15:45:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (13, 12, 8, 1, 289.00, 'paid', '2024-06-13 09:30:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (14, 13, 20, 1, 149.00, 'pending', '2024-06-14 18:00:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (15, 14, 13, 2, 14.90, 'delivered', '2024-06-15 07:50:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (16, 15, 14, 1, 44.00, 'shipped', '2024-06-16 12:00:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (17, 16, 18, 4, 7.50, 'paid', '2024-06-17 20:20:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (18, 17, 15, 1, 69.00, 'pending', '2024-06-18 10:40:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (19, 18, 16, 1, 119.00, 'delivered', '2024-06-19 11:25:00');
INSERT INTO orders (id, customer_id, product_id, quantity, unit_price, status, ordered_at) VALUES (20, 20, 17, 2, 49.00, 'paid', '2024-06-20 16:16:00');
