package proxy_test

// GORM on a sharded schema (issue 22, "Real ORMs"): the same GORM code
// against shardgate and against the reference server, answers compared.
// The schema, the comparison and the expected refusals: orm_test.go.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	gormlogger "gorm.io/gorm/logger"
)

// The GORM models of ormDDL's tables.

type gormCategory struct {
	ID       int
	Name     string
	ParentID *int
	Products []gormProduct `gorm:"foreignKey:CategoryID"`
}

func (gormCategory) TableName() string { return "categories" }

type gormProduct struct {
	ID         int
	SKU        string `gorm:"column:sku"`
	Name       string
	CategoryID *int
	Category   *gormCategory
	Price      string
	Active     bool
}

func (gormProduct) TableName() string { return "products" }

// gormProductColumns are products' columns, for a Select.
var gormProductColumns = []string{"id", "sku", "name", "category_id", "price", "active"}

type gormCustomer struct {
	ID       int64
	Name     string
	Email    *string
	Country  *string
	JoinedAt time.Time
	Orders   []gormOrder `gorm:"foreignKey:CustomerID"`
}

func (gormCustomer) TableName() string { return "customers" }

type gormOrder struct {
	ID         int64 `gorm:"primaryKey;autoIncrement:false"`
	CustomerID int64
	Customer   *gormCustomer
	Status     string
	Total      string
	PlacedAt   time.Time
	Note       *string
	Items      []gormItem `gorm:"foreignKey:OrderID"`
}

func (gormOrder) TableName() string { return "orders" }

type gormItem struct {
	ID        int64 `gorm:"primaryKey;autoIncrement:false"`
	OrderID   int64
	Order     *gormOrder
	ProductID int
	Product   *gormProduct
	Qty       int
	UnitPrice string
}

func (gormItem) TableName() string { return "order_items" }

// gormSQL is a GORM logger that keeps the statements GORM sent, with
// their errors.
type gormSQL struct {
	mu    sync.Mutex
	stmts []gormStmt
}

type gormStmt struct {
	sql string
	err error
}

func (l *gormSQL) LogMode(gormlogger.LogLevel) gormlogger.Interface { return l }
func (l *gormSQL) Info(context.Context, string, ...any)             {}
func (l *gormSQL) Warn(context.Context, string, ...any)             {}
func (l *gormSQL) Error(context.Context, string, ...any)            {}
func (l *gormSQL) Trace(_ context.Context, _ time.Time, fc func() (string, int64), err error) {
	s, _ := fc()
	l.mu.Lock()
	l.stmts = append(l.stmts, gormStmt{s, err})
	l.mu.Unlock()
}

// take returns the statements logged since the last take.
func (l *gormSQL) take() []gormStmt {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stmts
	l.stmts = nil
	return s
}

// failed is the first statement of stmts that failed, else all of them.
func gormFailed(stmts []gormStmt) string {
	for _, s := range stmts {
		if s.err != nil && !errors.Is(s.err, gorm.ErrRecordNotFound) {
			return s.sql
		}
	}
	return gormAll(stmts)
}

func gormAll(stmts []gormStmt) string {
	var b []string
	for _, s := range stmts {
		b = append(b, s.sql)
	}
	return strings.Join(b, "\n  ")
}

// openGorm opens dsn with GORM's MySQL driver configured as cfg.
func openGorm(t *testing.T, cfg gormmysql.Config, dsn string) (*gorm.DB, *gormSQL) {
	t.Helper()
	log := &gormSQL{}
	cfg.DSN = dsn
	db, err := gorm.Open(gormmysql.New(cfg), &gorm.Config{Logger: log})
	if err != nil {
		t.Fatalf("gorm.Open: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	return db, log
}

// gormQuery is one ORM call: run does it on db and returns what it
// answered (for a write, what the application learns: ids, rows
// affected). order: which order of the answer is promised. write: run
// it on the reference only when shardgate did not refuse it, so that
// both hold the same rows. fold: fields compared under their collation
// (ormCanon.fold).
type gormQuery struct {
	name  string
	order ormOrder
	write bool
	fold  []string
	run   func(db *gorm.DB) (any, error)
}

// gormFind is a query finding into a new slice of T.
func gormFind[T any](f func(db *gorm.DB, dest *[]T) *gorm.DB) func(db *gorm.DB) (any, error) {
	return func(db *gorm.DB) (any, error) {
		var dest []T
		err := f(db, &dest).Error
		return dest, err
	}
}

// gormOne is a query into one new T.
func gormOne[T any](f func(db *gorm.DB, dest *T) *gorm.DB) func(db *gorm.DB) (any, error) {
	return func(db *gorm.DB) (any, error) {
		var dest T
		err := f(db, &dest).Error
		return dest, err
	}
}

func gormCount(f func(db *gorm.DB) *gorm.DB) func(db *gorm.DB) (any, error) {
	return func(db *gorm.DB) (any, error) {
		var n int64
		err := f(db).Count(&n).Error
		return n, err
	}
}

// gormWrite is a write's answer: rows affected and the error.
func gormWrite(tx *gorm.DB, v any) (any, error) {
	return map[string]any{"rows_affected": tx.RowsAffected, "value": v}, tx.Error
}

func ptr[T any](v T) *T { return &v }

// Scan targets of grouped queries.
type gormStatusRow struct {
	Status   string
	N        int64
	Total    string
	AvgTotal string
	First    time.Time
	Last     time.Time
}

type gormSpentRow struct {
	ID    int64
	Name  string
	N     int64
	Spent *string
}

type gormCountryRow struct {
	Country *string
	N       int64
	MaxID   int64
}

type gormProductSales struct {
	ProductID int
	Name      string
	Qty       int64
}

func gormQueries() []gormQuery {
	return []gormQuery{
		// First, Last, Take, Find by primary keys.
		{name: "first", order: ormOrdered, run: gormOne(func(db *gorm.DB, c *gormCustomer) *gorm.DB { return db.First(c) })},
		{name: "first-where", order: ormOrdered, run: gormOne(func(db *gorm.DB, c *gormCustomer) *gorm.DB {
			return db.Where("country = ?", "FR").First(c)
		})},
		{name: "last", order: ormOrdered, run: gormOne(func(db *gorm.DB, o *gormOrder) *gorm.DB { return db.Last(o) })},
		{name: "take-by-pk", order: ormOrdered, run: gormOne(func(db *gorm.DB, c *gormCustomer) *gorm.DB { return db.Take(c, 17) })},
		{name: "first-not-found", order: ormOrdered, run: gormOne(func(db *gorm.DB, c *gormCustomer) *gorm.DB { return db.First(c, 9999) })},
		{name: "find-by-pks", run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB { return db.Find(cs, []int64{3, 9, 27, 38}) })},
		{name: "find-order-by-pk", order: ormOrdered, run: gormOne(func(db *gorm.DB, o *gormOrder) *gorm.DB { return db.First(o, 1077) })},
		{name: "find-where-in", order: ormOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Where("country IN ?", []string{"GB", "FR"}).Order("name, id").Find(cs)
		})},
		{name: "find-struct-conditions", run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Where(&gormOrder{Status: "paid", CustomerID: 5}).Find(os)
		})},
		{name: "find-or-not", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Where("total > ?", 300).Or("note = ?", "GIFT").Not("status = ?", "cancelled").Order("total DESC, id").Find(os)
		})},
		{name: "find-null", order: ormOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Where("email IS NULL OR country IS NULL").Order("joined_at, id").Find(cs)
		})},
		{name: "find-between-dates", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Where("placed_at BETWEEN ? AND ?", time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)).
				Order("placed_at DESC, id").Find(os)
		})},
		{name: "find-like-ci", order: ormOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Where("name LIKE ?", "al%").Order("name, id").Find(cs)
		})},

		// Count.
		{name: "count", run: gormCount(func(db *gorm.DB) *gorm.DB { return db.Model(&gormCustomer{}) })},
		{name: "count-where", run: gormCount(func(db *gorm.DB) *gorm.DB { return db.Model(&gormOrder{}).Where("status = ?", "paid") })},
		{name: "count-by-key", run: gormCount(func(db *gorm.DB) *gorm.DB { return db.Model(&gormOrder{}).Where("customer_id = ?", 7) })},
		{name: "count-distinct", run: gormCount(func(db *gorm.DB) *gorm.DB { return db.Model(&gormOrder{}).Distinct("customer_id") })},
		{name: "count-distinct-ci", run: gormCount(func(db *gorm.DB) *gorm.DB { return db.Model(&gormCustomer{}).Distinct("country") })},
		{name: "count-group", run: gormCount(func(db *gorm.DB) *gorm.DB { return db.Model(&gormOrder{}).Group("status") })},
		{name: "count-joins", run: gormCount(func(db *gorm.DB) *gorm.DB {
			return db.Model(&gormOrder{}).Joins("Customer").Where("Customer.country = ?", "US")
		})},

		// Pagination: a page, with the total count before it (what a
		// paginator does), on several pages.
		{name: "paginate-customers", order: ormOrdered, run: func(db *gorm.DB) (any, error) {
			var pages [][]gormCustomer
			var total int64
			if err := db.Model(&gormCustomer{}).Count(&total).Error; err != nil {
				return nil, err
			}
			for page := 0; page < 6; page++ {
				var cs []gormCustomer
				if err := db.Order("joined_at DESC, id").Offset(page * 7).Limit(7).Find(&cs).Error; err != nil {
					return nil, err
				}
				pages = append(pages, cs)
			}
			return map[string]any{"total": total, "pages": pages}, nil
		}},
		{name: "paginate-orders-where", order: ormOrdered, run: func(db *gorm.DB) (any, error) {
			var pages [][]gormOrder
			var total int64
			q := db.Model(&gormOrder{}).Where("total > ?", 100)
			if err := q.Count(&total).Error; err != nil {
				return nil, err
			}
			for page := 0; page < 4; page++ {
				var os []gormOrder
				if err := db.Where("total > ?", 100).Order("total DESC, id").Offset(page * 10).Limit(10).Find(&os).Error; err != nil {
					return nil, err
				}
				pages = append(pages, os)
			}
			return map[string]any{"total": total, "pages": pages}, nil
		}},
		{name: "paginate-preload", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Preload("Orders").Order("name, id").Offset(10).Limit(10).Find(cs)
		})},
		{name: "find-in-batches", order: ormOrdered, run: func(db *gorm.DB) (any, error) {
			var all [][]int64
			var batch []gormOrder
			err := db.Where("status <> ?", "cancelled").FindInBatches(&batch, 25, func(tx *gorm.DB, n int) error {
				var ids []int64
				for _, o := range batch {
					ids = append(ids, o.ID)
				}
				all = append(all, ids)
				return nil
			}).Error
			return all, err
		}},

		// Preload.
		{name: "preload-has-many", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Preload("Orders").Order("id").Find(cs)
		})},
		{name: "preload-ordered", order: ormOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Preload("Orders", func(db *gorm.DB) *gorm.DB { return db.Order("placed_at DESC, id") }).
				Where("country = ?", "gb").Order("id").Find(cs)
		})},
		{name: "preload-conditions", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Preload("Orders", "status IN ?", []string{"paid", "shipped"}).Where("id <= ?", 12).Order("id").Find(cs)
		})},
		{name: "preload-nested", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Preload("Orders.Items.Product.Category").Where("id BETWEEN ? AND ?", 5, 14).Order("id").Find(cs)
		})},
		{name: "preload-belongs-to", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Preload("Customer").Where("status = ?", "shipped").Order("id").Find(os)
		})},
		{name: "preload-associations", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Preload(clause.Associations).Where("customer_id IN ?", []int64{2, 11, 23}).Order("id").Find(os)
		})},
		{name: "preload-items-order", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, is *[]gormItem) *gorm.DB {
			return db.Preload("Order.Customer").Preload("Product").Where("qty >= ?", 5).Order("id").Find(is)
		})},
		{name: "preload-categories", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCategory) *gorm.DB {
			return db.Preload("Products").Order("id").Find(cs)
		})},

		// Joins.
		{name: "joins-belongs-to", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Joins("Customer").Order("orders.id").Limit(20).Find(os)
		})},
		{name: "joins-where-related", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Joins("Customer").Where("Customer.country = ?", "GB").Order("orders.placed_at, orders.id").Find(os)
		})},
		{name: "joins-conditions", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Joins("Customer", db.Where(&gormCustomer{Country: ptr("DE")})).Where("orders.total < ?", 200).Order("orders.id").Find(os)
		})},
		{name: "inner-joins", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.InnerJoins("Customer", db.Where("Customer.name = ?", "alice")).Order("orders.id").Find(os)
		})},
		{name: "joins-reference", order: ormOrdered, run: gormFind(func(db *gorm.DB, is *[]gormItem) *gorm.DB {
			return db.Joins("Product").Where("Product.price > ?", 60).Order("order_items.id").Find(is)
		})},
		{name: "joins-reference-unsharded", order: ormOrdered, run: gormFind(func(db *gorm.DB, ps *[]gormProduct) *gorm.DB {
			return db.Joins("Category").Where("Category.name <> ?", "Books").Order("products.id").Find(ps)
		})},
		{name: "joins-other-rule", order: ormOrdered, run: gormFind(func(db *gorm.DB, is *[]gormItem) *gorm.DB {
			return db.Joins("Order").Where("`Order`.status = ?", "cancelled").Order("order_items.id").Find(is)
		})},
		// The relationship's name is a reserved word, written unquoted in
		// the condition: MariaDB takes `Order.status`.
		{name: "joins-alias-reserved-word", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Model(&gormOrder{}).Joins("JOIN customers `Order` ON `Order`.id = orders.customer_id").
				Where("Order.country = ?", "FR").Order("orders.id").Find(os)
		})},
		{name: "joins-preload", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Joins("Customer").Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
				Where("orders.status = ?", "pending").Order("orders.id").Find(os)
		})},
		{name: "joins-raw-group", order: ormOrdered, run: gormFind(func(db *gorm.DB, rs *[]gormSpentRow) *gorm.DB {
			return db.Model(&gormCustomer{}).Select("customers.id, customers.name, COUNT(orders.id) AS n, SUM(orders.total) AS spent").
				Joins("LEFT JOIN orders ON orders.customer_id = customers.id").
				Group("customers.id, customers.name").Order("spent DESC, customers.id").Limit(8).Scan(rs)
		})},
		{name: "joins-raw-other-rule", order: ormOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Distinct("customers.id", "customers.name").
				Joins("JOIN orders ON orders.customer_id = customers.id").
				Joins("JOIN order_items ON order_items.order_id = orders.id").
				Where("order_items.product_id = ?", 3).Order("customers.id").Find(cs)
		})},
		{name: "joins-reference-group", order: ormOrdered, run: gormFind(func(db *gorm.DB, rs *[]gormProductSales) *gorm.DB {
			return db.Model(&gormItem{}).Select("order_items.product_id, products.name, SUM(order_items.qty) AS qty").
				Joins("JOIN products ON products.id = order_items.product_id").
				Group("order_items.product_id, products.name").Order("qty DESC, order_items.product_id").Limit(6).Scan(rs)
		})},

		// Where on related fields through subqueries.
		{name: "where-subquery-colocated", order: ormOrdered, run: gormFind(func(db *gorm.DB, os *[]gormOrder) *gorm.DB {
			return db.Where("customer_id IN (?)", db.Model(&gormCustomer{}).Select("id").Where("country = ?", "DE")).Order("id").Find(os)
		})},
		{name: "where-subquery-other-rule", order: ormOrdered, run: gormFind(func(db *gorm.DB, is *[]gormItem) *gorm.DB {
			return db.Where("order_id IN (?)", db.Model(&gormOrder{}).Select("id").Where("status = ?", "cancelled")).Order("id").Find(is)
		})},
		{name: "where-subquery-reference", order: ormOrdered, run: gormFind(func(db *gorm.DB, is *[]gormItem) *gorm.DB {
			return db.Where("product_id IN (?)", db.Model(&gormProduct{}).Select("id").Where("active = ?", false)).Order("id").Find(is)
		})},
		// A reference table filtered by a subquery on a sharded one
		// ("products that were ordered", "never ordered"), its columns
		// listed: shardgate refuses SELECT * there (the columns of a
		// reference table are not learnt), as if the statement were read
		// across shards.
		{name: "reference-where-in-sharded", order: ormOrdered, run: gormFind(func(db *gorm.DB, ps *[]gormProduct) *gorm.DB {
			return db.Select(gormProductColumns).Where("id IN (?)", db.Model(&gormItem{}).Select("product_id").Where("qty > ?", 5)).Order("id").Find(ps)
		})},
		{name: "reference-where-not-in-sharded", order: ormOrdered, run: gormFind(func(db *gorm.DB, ps *[]gormProduct) *gorm.DB {
			return db.Select(gormProductColumns).Where("id NOT IN (?)", db.Model(&gormItem{}).Select("product_id").Where("qty > ?", 1)).Order("id").Find(ps)
		})},
		{name: "reference-where-exists-sharded", order: ormOrdered, run: gormFind(func(db *gorm.DB, ps *[]gormProduct) *gorm.DB {
			return db.Select(gormProductColumns).Where("EXISTS (?)", db.Model(&gormItem{}).Select("1").Where("order_items.product_id = products.id AND order_items.qty = ?", 6)).
				Order("id").Find(ps)
		})},
		// A reference table outer-joined with a sharded one: products
		// and how often each was ordered 6 at a time.
		{name: "reference-left-join-sharded", order: ormOrdered, run: gormFind(func(db *gorm.DB, rs *[]gormProductSales) *gorm.DB {
			return db.Model(&gormProduct{}).Select("products.id AS product_id, products.name, COUNT(*) AS qty").
				Joins("LEFT JOIN order_items ON order_items.product_id = products.id AND order_items.qty = ?", 6).
				Group("products.id, products.name").Order("products.id").Scan(rs)
		})},
		{name: "where-exists-colocated", order: ormOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Where("EXISTS (?)", db.Model(&gormOrder{}).Select("1").Where("orders.customer_id = customers.id AND orders.status = ?", "cancelled")).
				Order("id").Find(cs)
		})},
		{name: "where-not-exists", order: ormOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Where("NOT EXISTS (?)", db.Model(&gormOrder{}).Select("1").Where("orders.customer_id = customers.id")).Order("id").Find(cs)
		})},

		// Group, Having, Pluck.
		{name: "group-having", order: ormOrdered, run: gormFind(func(db *gorm.DB, rs *[]gormStatusRow) *gorm.DB {
			return db.Model(&gormOrder{}).
				Select("status, COUNT(*) AS n, SUM(total) AS total, AVG(total) AS avg_total, MIN(placed_at) AS first, MAX(placed_at) AS last").
				Group("status").Having("COUNT(*) > ?", 20).Order("status").Scan(rs)
		})},
		{name: "group-ci-having-order-by-aggregate", order: ormOrdered, fold: []string{"country"}, run: gormFind(func(db *gorm.DB, rs *[]gormCountryRow) *gorm.DB {
			return db.Model(&gormCustomer{}).Select("country, COUNT(*) AS n, MAX(id) AS max_id").
				Group("country").Having("MAX(id) > ?", 10).Order("n DESC, max_id").Scan(rs)
		})},
		{name: "pluck", order: ormOrdered, run: func(db *gorm.DB) (any, error) {
			var names []string
			err := db.Model(&gormCustomer{}).Order("name, id").Pluck("name", &names).Error
			return names, err
		}},
		{name: "pluck-distinct", order: ormOrdered, run: func(db *gorm.DB) (any, error) {
			var statuses []string
			err := db.Model(&gormOrder{}).Distinct().Order("status").Pluck("status", &statuses).Error
			return statuses, err
		}},
		{name: "pluck-ids-where", run: func(db *gorm.DB) (any, error) {
			var ids []int64
			err := db.Model(&gormOrder{}).Where("note IS NOT NULL").Pluck("id", &ids).Error
			return ids, err
		}},

		// Associations mode.
		{name: "association-count", run: func(db *gorm.DB) (any, error) {
			n := db.Model(&gormCustomer{ID: 9}).Association("Orders").Count()
			return n, nil
		}},
		{name: "association-find", order: ormOrdered, run: func(db *gorm.DB) (any, error) {
			var os []gormOrder
			err := db.Model(&gormCustomer{ID: 21}).Order("id").Association("Orders").Find(&os)
			return os, err
		}},
		{name: "raw-scan", order: ormOrdered, fold: []string{"country"}, run: gormFind(func(db *gorm.DB, rs *[]gormCountryRow) *gorm.DB {
			return db.Raw("SELECT country, COUNT(*) AS n, MAX(id) AS max_id FROM customers WHERE id > ? GROUP BY country ORDER BY country", 4).Scan(rs)
		})},

		// Writes. Customers get their ids from shardgate's sequence, the
		// reference's from AUTO_INCREMENT: the same ids, as runGorm moves
		// both past the same id before each write (ormEnv.realign).
		{name: "create", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			c := gormCustomer{Name: "Nadia", Email: ptr("nadia@example.org"), Country: ptr("FR"), JoinedAt: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)}
			return gormWrite(db.Create(&c), c)
		}},
		{name: "create-batch", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			cs := []gormCustomer{
				{Name: "Olga", Country: ptr("DE"), JoinedAt: time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)},
				{Name: "Peter", Country: ptr("GB"), JoinedAt: time.Date(2025, 6, 3, 9, 0, 0, 0, time.UTC)},
				{Name: "quentin", JoinedAt: time.Date(2025, 6, 4, 9, 0, 0, 0, time.UTC)},
				{Name: "Rosa", Country: ptr("US"), JoinedAt: time.Date(2025, 6, 5, 9, 0, 0, 0, time.UTC)},
			}
			return gormWrite(db.Create(&cs), cs)
		}},
		{name: "create-in-batches", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			var cs []gormCustomer
			for i := range 7 {
				cs = append(cs, gormCustomer{Name: fmt.Sprintf("batch %d", i), JoinedAt: time.Date(2025, 7, 1+i, 0, 0, 0, 0, time.UTC)})
			}
			return gormWrite(db.CreateInBatches(&cs, 3), cs)
		}},
		{name: "create-with-associations", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			c := gormCustomer{Name: "Sven", Country: ptr("DE"), JoinedAt: time.Date(2025, 6, 6, 9, 0, 0, 0, time.UTC),
				Orders: []gormOrder{
					{ID: 2001, Status: "pending", Total: "19.90", PlacedAt: time.Date(2025, 6, 6, 10, 0, 0, 0, time.UTC),
						Items: []gormItem{{ID: 5001, ProductID: 3, Qty: 2, UnitPrice: "9.95"}}},
					{ID: 2002, Status: "paid", Total: "5.00", PlacedAt: time.Date(2025, 6, 6, 11, 0, 0, 0, time.UTC)},
				}}
			return gormWrite(db.Create(&c), c)
		}},
		{name: "create-order-for-customer", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			o := gormOrder{ID: 2003, CustomerID: 8, Status: "pending", Total: "42.00", PlacedAt: time.Date(2025, 6, 7, 0, 0, 0, 0, time.UTC),
				Items: []gormItem{{ID: 5002, ProductID: 1, Qty: 1, UnitPrice: "42.00"}, {ID: 5003, ProductID: 2, Qty: 3, UnitPrice: "1.00"}}}
			return gormWrite(db.Create(&o), o)
		}},
		{name: "save", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			var c gormCustomer
			if err := db.First(&c, 12).Error; err != nil {
				return nil, err
			}
			c.Name = "Renamed"
			c.Email = nil
			return gormWrite(db.Save(&c), c)
		}},
		{name: "save-new", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			c := gormCustomer{Name: "Tomas", JoinedAt: time.Date(2025, 6, 8, 0, 0, 0, 0, time.UTC)}
			return gormWrite(db.Save(&c), c)
		}},
		{name: "update-column", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			return gormWrite(db.Model(&gormOrder{ID: 1010}).Update("note", "changed"), nil)
		}},
		{name: "updates-where", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			return gormWrite(db.Model(&gormOrder{}).Where("status = ?", "pending").Updates(map[string]any{"status": "processing", "note": "bulk"}), nil)
		}},
		{name: "update-expr-by-key", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			return gormWrite(db.Model(&gormOrder{}).Where("customer_id = ?", 3).Update("total", gorm.Expr("total * ?", 2)), nil)
		}},
		{name: "update-reference", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			return gormWrite(db.Model(&gormProduct{}).Where("category_id = ?", 2).Update("price", gorm.Expr("price + 1")), nil)
		}},
		{name: "upsert-reference", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			p := gormProduct{ID: 4, SKU: "SKU-004", Name: "upserted", Price: "1.50", Active: true}
			return gormWrite(db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&p), p)
		}},
		{name: "first-or-create", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			c := gormCustomer{}
			tx := db.Where(gormCustomer{Email: ptr("new@example.org")}).
				Attrs(gormCustomer{Name: "Ursula", JoinedAt: time.Date(2025, 6, 9, 0, 0, 0, 0, time.UTC)}).FirstOrCreate(&c)
			return gormWrite(tx, c)
		}},
		{name: "move-order-to-customer", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			return gormWrite(db.Model(&gormOrder{ID: 1020}).Update("customer_id", 37), nil)
		}},
		{name: "transaction", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			var c gormCustomer
			err := db.Transaction(func(tx *gorm.DB) error {
				c = gormCustomer{Name: "Vera", Country: ptr("GB"), JoinedAt: time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)}
				if err := tx.Create(&c).Error; err != nil {
					return err
				}
				o := gormOrder{ID: 2004, CustomerID: c.ID, Status: "paid", Total: "7.00", PlacedAt: c.JoinedAt}
				if err := tx.Create(&o).Error; err != nil {
					return err
				}
				if err := tx.Create(&gormItem{ID: 5004, OrderID: 1002, ProductID: 5, Qty: 1, UnitPrice: "7.00"}).Error; err != nil {
					return err
				}
				return tx.Model(&gormCustomer{ID: 30}).Update("country", "US").Error
			})
			return c, err
		}},
		{name: "transaction-rollback", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			errRollback := errors.New("rolled back on purpose")
			err := db.Transaction(func(tx *gorm.DB) error {
				if err := tx.Model(&gormOrder{}).Where("status = ?", "paid").Update("status", "lost").Error; err != nil {
					return err
				}
				return errRollback
			})
			if errors.Is(err, errRollback) {
				err = nil
			}
			return nil, err
		}},
		{name: "delete-by-pk", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			return gormWrite(db.Delete(&gormOrder{}, 1030), nil)
		}},
		{name: "delete-where", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			return gormWrite(db.Where("qty = ?", 1).Delete(&gormItem{}), nil)
		}},
		{name: "delete-with-associations", order: ormOrdered, write: true, run: func(db *gorm.DB) (any, error) {
			return gormWrite(db.Select("Orders").Delete(&gormCustomer{ID: 36}), nil)
		}},
		{name: "reread-after-writes", order: ormTopOrdered, run: gormFind(func(db *gorm.DB, cs *[]gormCustomer) *gorm.DB {
			return db.Preload("Orders.Items").Where("id > ?", 30).Order("id").Find(cs)
		})},
	}
}

// TestORMGorm runs GORM's queries (First, Take, Find, Count, pagination,
// Preload and nested preloads, Joins, subqueries, Group and Having,
// Pluck, associations) and writes (Create with ids from shardgate's
// sequence, nested associations, Save, Updates, upserts, transactions,
// Delete) through shardgate and against the reference, in order: each
// answer must be the reference's, or a refusal ormExpectedRefusals lists.
// The tables' rows must then be the reference's.
//
// GORM's MySQL driver asks the server's version: on MariaDB 10.5 and
// later it writes INSERT … RETURNING (ORM "gorm"); on MySQL it reads the
// OK packet's insert id. The writes run again with the version check
// skipped, as GORM runs on MySQL (ORM "gorm-mysql"), on servers of their
// own.
func TestORMGorm(t *testing.T) {
	t.Run("mariadb", func(t *testing.T) {
		runGorm(t, "gorm", gormmysql.Config{}, func(gormQuery) bool { return true })
	})
	t.Run("mysql", func(t *testing.T) {
		runGorm(t, "gorm-mysql", gormmysql.Config{SkipInitializeWithVersion: true},
			func(q gormQuery) bool { return q.write || q.name == "reread-after-writes" })
	})
}

// runGorm runs the queries keep keeps on a new ormEnv, GORM's driver
// configured as cfg, and records them under orm.
func runGorm(t *testing.T, orm string, cfg gormmysql.Config, keep func(gormQuery) bool) {
	e := startORMEnv(t)
	const params = "parseTime=true&loc=UTC"
	pdb, plog := openGorm(t, cfg, e.proxyDSN(params))
	rdb, rlog := openGorm(t, cfg, e.refDSN(params))
	plog.take()
	rlog.take()

	led := newORMLedger(t, orm)
	writes := 0
	for _, q := range gormQueries() {
		if !keep(q) {
			continue
		}
		if q.write {
			e.realign(t, writes)
			writes++
		}
		led.start(q.name)
		got, gerr := q.run(pdb)
		gsql := plog.take()
		if reason, ok := shardgateRefusal(gerr); ok {
			led.refuse(q.name, reason, gormFailed(gsql))
			if !q.write {
				if _, rerr := q.run(rdb); rerr != nil {
					t.Errorf("%s: the reference failed too: %v\n  %s", q.name, rerr, gormAll(rlog.take()))
				}
				rlog.take()
			}
			continue
		}
		led.answer(q.name)
		want, werr := q.run(rdb)
		rsql := rlog.take()
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: shardgate's error %v, the reference's %v\n  shardgate ran:\n  %s\n  the reference ran:\n  %s",
				q.name, gerr, werr, gormAll(gsql), gormAll(rsql))
			continue
		}
		g, err := ormCanonical(got, q.order, q.fold)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ormCanonical(want, q.order, q.fold)
		if err != nil {
			t.Fatal(err)
		}
		if g != w {
			t.Errorf("%s (%s): shardgate's answer differs from the reference's\n  shardgate ran:\n  %s\n%s",
				q.name, q.order, gormAll(gsql), ormDiff(w, g))
		}
		if !q.write {
			var stmts []string
			for _, s := range gsql {
				stmts = append(stmts, s.sql)
			}
			e.replay(t, q.name, stmts, q.fold)
		}
	}
	led.finish()
	if g, w := ormTableDump(t, e.pxDB), ormTableDump(t, e.refDB); g != w {
		t.Errorf("after the writes, the tables through shardgate differ from the reference's:\n%s", ormDiff(w, g))
	}
}
