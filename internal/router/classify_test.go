package router

import (
	"strings"
	"testing"
)

type classifyCase struct {
	sql   string
	kind  Kind
	flags Flags
}

// Shorter names for the table.
const (
	fUV   = FlagUserVar
	fSys  = FlagSysVarSet
	fLock = FlagGetLock
	fTmp  = FlagTempTable
	fCalc = FlagCalcFoundRows
	fFR   = FlagFoundRows
	fRC   = FlagRowCount
	fLII  = FlagLastInsertID
	fLIIA = FlagLastInsertIDArg
	fWarn = FlagWarnings
	fLoc  = FlagLocal
	fFU   = FlagForUpdate
	fMul  = FlagMultiStatement
	fCID  = FlagConnectionID
	fSE   = FlagSideEffectFunc
	fInto = FlagSelectInto
	fTrx  = FlagTrxIsolationSet
	fAC   = FlagAutocommit
	fAX   = FlagAnalyzeExec
	fHP   = FlagHintPrimary
	fHR   = FlagHintReplica
)

var classifyCases = []classifyCase{
	// empty and degenerate input
	{"", KindOther, 0},
	{"   \t\r\n", KindOther, 0},
	{";", KindOther, 0},
	{";;  ;", KindOther, 0},
	{"-- only a comment", KindOther, 0},
	{"/* unterminated", KindOther, 0},
	{"#", KindOther, 0},
	{"--", KindOther, 0},
	{"(", KindOther, 0},
	{"((((", KindOther, 0},
	{")))", KindOther, 0},
	{"'unterminated", KindOther, 0},
	{"`unterminated", KindOther, 0},
	{"\"unterminated \\", KindOther, 0},
	{"@", KindOther, fUV},
	{"@@", KindOther, 0},
	{"/*!", KindOther, 0},
	{"/*M!", KindOther, 0},
	{"/*!50700", KindOther, 0},
	{"*/", KindOther, 0},
	{"\xff\xfe\x00", KindOther, 0},
	{"SELECT \xff\xfe 'a\xc3", KindSelect, 0},
	{"selectx 1", KindOther, 0},
	{"`select` 1", KindOther, 0},
	{"'select'", KindOther, 0},
	{"123", KindOther, 0},

	// basic kinds, case-insensitive
	{"SELECT 1", KindSelect, 0},
	{"select 1", KindSelect, 0},
	{"SeLeCt 1", KindSelect, 0},
	{"SELECT c FROM sbtest1 WHERE id=5000", KindSelect, 0},
	{"INSERT INTO t VALUES (1)", KindInsert, 0},
	{"insert into t set a=1", KindInsert, 0},
	{"UPDATE t SET a=1 WHERE id=2", KindUpdate, 0},
	{"DELETE FROM t", KindDelete, 0},
	{"REPLACE INTO t VALUES (1)", KindReplace, 0},
	{"USE db", KindUse, 0},
	{"BEGIN", KindBegin, 0},
	{"begin work", KindBegin, 0},
	{"START TRANSACTION", KindBegin, 0},
	{"START TRANSACTION READ ONLY", KindBegin, 0},
	{"start transaction with consistent snapshot", KindBegin, 0},
	{"COMMIT", KindCommit, 0},
	{"COMMIT WORK AND NO CHAIN", KindCommit, 0},
	{"ROLLBACK", KindRollback, 0},
	{"ROLLBACK WORK", KindRollback, 0},
	{"ROLLBACK AND CHAIN", KindRollback, 0},
	{"ROLLBACK TO SAVEPOINT s1", KindSavepoint, 0},
	{"ROLLBACK TO s1", KindSavepoint, 0},
	{"rollback work to savepoint s1", KindSavepoint, 0},
	{"ROLLBACK /* c */ TO s1", KindSavepoint, 0},
	{"SAVEPOINT s1", KindSavepoint, 0},
	{"RELEASE SAVEPOINT s1", KindSavepoint, 0},
	{"RELEASE s1", KindOther, 0},
	{"SHOW TABLES", KindShow, 0},
	{"SHOW CREATE TABLE t", KindShow, 0},
	{"LOCK TABLES t READ", KindLock, 0},
	{"LOCK TABLE t WRITE", KindLock, 0},
	{"LOCK INSTANCE FOR BACKUP", KindLock, 0},
	{"UNLOCK TABLES", KindUnlock, 0},
	{"BACKUP LOCK t", KindLock, 0},
	{"BACKUP UNLOCK", KindUnlock, 0},
	{"BACKUP STAGE START", KindOther, 0},
	{"PREPARE s FROM 'SELECT ?'", KindPrepare, 0},
	{"PREPARE s FROM @sql", KindPrepare, fUV},
	{"EXECUTE s USING @a, @b", KindExecute, fUV},
	{"DEALLOCATE PREPARE s", KindDeallocate, 0},
	{"DROP PREPARE s", KindDeallocate, 0},
	{"DROP TABLE t", KindDrop, 0},
	{"LOAD DATA INFILE '/tmp/x' INTO TABLE t", KindLoadData, 0},
	{"LOAD DATA LOCAL INFILE '/tmp/x' INTO TABLE t", KindLoadData, fLoc},
	{"load data low_priority local infile 'x' into table t", KindLoadData, fLoc},
	{"LOAD XML LOCAL INFILE 'x.xml' INTO TABLE t", KindLoadData, fLoc},
	{"LOAD DATA INFILE 'x' INTO TABLE t CHARACTER SET local", KindLoadData, 0},
	{"LOAD INDEX INTO CACHE t", KindOther, 0},
	{"CREATE TABLE t (id INT)", KindCreate, 0},
	{"ALTER TABLE t ADD COLUMN c INT", KindAlter, 0},
	{"TRUNCATE TABLE t", KindTruncate, 0},
	{"TRUNCATE t", KindTruncate, 0},
	{"CALL p(1, 2)", KindCall, 0},
	{"DO 1", KindDo, 0},
	{"DO SLEEP(1)", KindDo, fSE},
	{"HANDLER t OPEN", KindHandler, 0},
	{"XA START 'x'", KindXA, 0},
	{"XA COMMIT 'x'", KindXA, 0},
	{"XA ROLLBACK 'x'", KindXA, 0},
	{"FLUSH PRIVILEGES", KindFlush, 0},
	{"ANALYZE TABLE t", KindAnalyze, fAX},
	{"ANALYZE SELECT * FROM t", KindAnalyze, fAX},
	{"EXPLAIN SELECT * FROM t", KindAnalyze, 0},
	{"EXPLAIN FORMAT=JSON SELECT * FROM t", KindAnalyze, 0},
	{"EXPLAIN ANALYZE SELECT * FROM t", KindAnalyze, fAX},
	{"EXPLAIN FOR CONNECTION 12", KindAnalyze, fAX},
	{"EXPLAIN UPDATE t SET a=1", KindAnalyze, 0},
	{"DESCRIBE t", KindAnalyze, 0},
	{"DESC t", KindAnalyze, 0},
	{"desc t", KindAnalyze, 0},
	{"VALUES ROW(1, 2), ROW(3, 4)", KindValues, 0},
	{"TABLE t", KindTable, 0},
	{"TABLE t ORDER BY a LIMIT 1", KindTable, 0},
	{"GRANT SELECT ON db.* TO bob", KindGrant, 0},
	{"REVOKE SELECT ON db.* FROM bob", KindRevoke, 0},
	{"RENAME TABLE a TO b", KindRename, 0},
	{"OPTIMIZE TABLE t", KindOptimize, 0},
	{"CHECK TABLE t", KindCheck, 0},
	{"CHECKSUM TABLE t", KindOther, 0},
	{"REPAIR TABLE t", KindRepair, 0},
	{"RESET MASTER", KindReset, 0},
	{"PURGE BINARY LOGS TO 'mysql-bin.000010'", KindPurge, 0},
	{"CHANGE MASTER TO MASTER_HOST='h'", KindChange, 0},
	{"CHANGE REPLICATION SOURCE TO SOURCE_HOST='h'", KindChange, 0},
	{"START SLAVE", KindStart, 0},
	{"START REPLICA", KindStart, 0},
	{"START GROUP_REPLICATION", KindStart, 0},
	{"STOP SLAVE", KindStop, 0},
	{"STOP REPLICA", KindStop, 0},
	{"SHUTDOWN", KindOther, 0},
	{"INSTALL PLUGIN x SONAME 'x.so'", KindOther, 0},

	// leading whitespace, comments and parentheses
	{"  \n\t SELECT 1", KindSelect, 0},
	{"/* hello */ SELECT 1", KindSelect, 0},
	{"/* multi\nline */\n-- dash comment\n# hash comment\nSELECT 1", KindSelect, 0},
	{"-- \nSELECT 1", KindSelect, 0},
	{"--\tx\nSELECT 1", KindSelect, 0},
	{"--\nSELECT 1", KindSelect, 0},
	{"/**/SELECT 1", KindSelect, 0},
	{"/*/ still a comment */SELECT 1", KindSelect, 0},
	{"/*+ hint */ SELECT 1", KindSelect, 0},
	{"SELECT /*+ BKA(t) */ /* c */ /*+ NO_ICP(t) */ value - 1 FROM t", KindSelect, 0},
	{"(SELECT 1)", KindSelect, 0},
	{"((SELECT 1) UNION (SELECT 2))", KindSelect, 0},
	{"( /* c */ ( select 1))", KindSelect, 0},
	{"(VALUES ROW(1))", KindValues, 0},
	{"(TABLE t)", KindTable, 0},
	{"(WITH a AS (SELECT 1) SELECT * FROM a)", KindSelect, 0},
	{"SELECT/**/1", KindSelect, 0},
	{"SELECT--1", KindSelect, 0}, // not a comment: "--" is followed by '1'
	{"SELECT 1 -- comment with ; and @x and FOUND_ROWS()", KindSelect, 0},
	{"SELECT 1 # comment with ; and @x and SLEEP(1)\n", KindSelect, 0},
	{"SELECT 1 /* ; @x GET_LOCK('a',1) */", KindSelect, 0},
	{"SELECT /* FOR UPDATE */ 1", KindSelect, 0},
	{"SELECT 1 --\n; SELECT 2", KindSelect, fMul},
	{"SELECT 1 --x\n", KindSelect, 0},

	// executable comments
	{"/*!40101 SET NAMES utf8mb4 */", KindSet, fSys},
	{"/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */", KindSet, fUV},
	{"/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */", KindSet, fUV | fSys},
	{"/*!40103 SET TIME_ZONE='+00:00' */;", KindSet, fSys},
	{"/*! SELECT 1 */", KindSelect, 0},
	{"/*!50700 SELECT SQL_CALC_FOUND_ROWS * FROM t */", KindSelect, fCalc},
	{"/*!800001 SELECT 1 */", KindSelect, 0},
	{"/*M!100100 SELECT 1 */", KindSelect, 0},
	{"/*M! SELECT 1 */", KindSelect, 0},
	{"SELECT /*! SQL_CALC_FOUND_ROWS */ * FROM t", KindSelect, fCalc},
	{"SELECT /*!50000 FOUND_ROWS() */", KindSelect, fFR},
	{"CREATE /*!32312 TEMPORARY */ TABLE t (a INT)", KindCreate, fTmp},
	{"SELECT * FROM t /*!50000 FOR UPDATE */", KindSelect, fFU},
	{"SELECT 1 /*!;SELECT 2*/", KindSelect, fMul},
	{"SELECT 1; /*!40101 */", KindSelect, 0},
	{"SELECT 1; /*!40101 SET x=1 */", KindSelect, fMul | fSys},
	{"SELECT '*/' /*! , '*/' */ FROM t", KindSelect, 0},
	{"/*!50001 CREATE ALGORITHM=UNDEFINED */ /*!50013 DEFINER=`root`@`localhost` SQL SECURITY DEFINER */ /*!50001 VIEW v AS SELECT 1 */", KindCreate, 0},
	{"/*!99999", KindOther, 0},

	// strings, escapes and quoted identifiers hide everything
	{"SELECT 'it''s FOR UPDATE; @x SLEEP(1)' FROM t", KindSelect, 0},
	{`SELECT 'it\'s FOR UPDATE; @x SLEEP(1)' FROM t`, KindSelect, 0},
	{`SELECT "dq \" ; @x FOUND_ROWS()" FROM t`, KindSelect, 0},
	{`SELECT "dq "" ; @x FOUND_ROWS()" FROM t`, KindSelect, 0},
	{`SELECT 'a\\' , @x`, KindSelect, fUV},
	{`SELECT 'a\\'';' , 1`, KindSelect, 0},
	{"SELECT `col;@x` FROM `we``ird; SLEEP(1)`", KindSelect, 0},
	{"SELECT `a\\` , @b", KindSelect, fUV}, // no backslash escapes in backticks
	{`SELECT '\'', @x`, KindSelect, fUV},
	{`SELECT 'a\\\'b', @x`, KindSelect, fUV},
	{`SELECT '\\\\', @x`, KindSelect, fUV},
	{`SELECT 'a\'b\'c;@x'`, KindSelect, 0},
	{`SELECT 'a\`, KindSelect, 0},
	{"INSERT INTO t (email) VALUES ('bob@example.com')", KindInsert, 0},
	{"INSERT INTO t VALUES ('a;b', '--', '/*', '#')", KindInsert, 0},
	{"SELECT '/*' , 1 FOR UPDATE", KindSelect, fFU},
	{"SELECT _utf8mb4'x' COLLATE utf8mb4_bin, N'y', X'ff', b'01'", KindSelect, 0},

	// user variables
	{"SELECT @a", KindSelect, fUV},
	{"SELECT @a := 1", KindSelect, fUV},
	{"SELECT @`weird name`", KindSelect, fUV},
	{"SELECT @'quoted'", KindSelect, fUV},
	{`SELECT @"dq"`, KindSelect, fUV},
	{"SELECT c FROM t WHERE id=@id", KindSelect, fUV},
	{"SELECT 1+@a", KindSelect, fUV},
	{"SELECT @@version", KindSelect, 0},
	{"SELECT @@session.sql_mode, @@GLOBAL.max_connections", KindSelect, 0},
	{"SELECT 'a'@b", KindSelect, fUV}, // not an account statement
	{"SET @a = 1", KindSet, fUV},
	{"SET@a=1", KindSet, fUV},
	{"SET @a = 1, @b := 2", KindSet, fUV},

	// account names are not user variables
	{"GRANT SELECT ON db.* TO 'u'@'localhost'", KindGrant, 0},
	{"GRANT ALL ON *.* TO `u`@`%` WITH GRANT OPTION", KindGrant, 0},
	{`GRANT ALL ON *.* TO "u"@"%"`, KindGrant, 0},
	{"GRANT PROXY ON 'a'@'b' TO 'c'@'d'", KindGrant, 0},
	{"REVOKE ALL ON db.* FROM 'u'@'10.0.0.%'", KindRevoke, 0},
	{"CREATE USER 'u'@'localhost' IDENTIFIED BY 'p@ss'", KindCreate, 0},
	{"CREATE USER u@localhost", KindCreate, 0},
	{"CREATE USER bob@'%', 'alice'@192.168.0.1", KindCreate, 0},
	{"ALTER USER 'u'@'h' IDENTIFIED BY 'x'", KindAlter, 0},
	{"DROP USER 'u'@'h', v@h", KindDrop, 0},
	{"RENAME USER 'a'@'h' TO 'b'@'h'", KindRename, 0},
	{"SET PASSWORD FOR 'u'@'h' = 'x'", KindSet, FlagSetNotVariable},
	{"SET PASSWORD FOR u@h = 'x'", KindSet, FlagSetNotVariable},
	{"SET PASSWORD = 'x'", KindSet, FlagSetNotVariable},
	{"SET DEFAULT ROLE r TO 'u'@'h'", KindSet, FlagSetNotVariable},
	{"SHOW GRANTS FOR 'u'@'h'", KindShow, 0},
	{"SHOW GRANTS FOR u@h", KindShow, 0},
	{"CREATE DEFINER=`root`@`localhost` PROCEDURE p() SELECT 1", KindCreate, 0},
	{"CREATE DEFINER=root@localhost VIEW v AS SELECT 1", KindCreate, 0},
	{"GRANT SELECT ON db.* TO 'u' @'h'", KindGrant, fUV}, // only adjacent counts
	{"CREATE TABLE t AS SELECT @a", KindCreate, fUV},
	{"CREATE TABLE t AS SELECT 1 FROM x WHERE a=1 AND@a", KindCreate, fUV},

	// SET and system variables
	{"SET autocommit=0", KindSet, fSys | fAC},
	{"SET AUTOCOMMIT = 1", KindSet, fSys | fAC},
	{"set autocommit:=1", KindSet, fSys | fAC},
	{"SET @@autocommit=0", KindSet, fSys | fAC},
	{"SET @@session.autocommit=0", KindSet, fSys | fAC},
	{"SET @@local.autocommit=0", KindSet, fSys | fAC},
	{"SET SESSION autocommit=0", KindSet, fSys | fAC},
	{"SET LOCAL autocommit=0", KindSet, fSys | fAC},
	{"SET `autocommit`=0", KindSet, fSys | fAC},
	{"SET @@`autocommit`=0", KindSet, fSys | fAC},
	{"SET GLOBAL autocommit=0", KindSet, fSys},
	{"SET @@global.autocommit=0", KindSet, fSys},
	{"SET PERSIST autocommit=0", KindSet, fSys},
	{"SET @a=1, autocommit=0", KindSet, fUV | fSys | fAC},
	{"SET sql_mode='', autocommit=0", KindSet, fSys | fAC},
	{"SET GLOBAL x=1, SESSION autocommit=0", KindSet, fSys | fAC},
	{"SET @autocommit=0", KindSet, fUV},
	{"SET x = (SELECT autocommit FROM t LIMIT 1)", KindSet, fSys},
	{"SET x = IF(1, 2, 3), y = 4", KindSet, fSys},
	{"SET sql_mode = 'STRICT_ALL_TABLES'", KindSet, fSys},
	{"SET @@SESSION.sql_mode = ''", KindSet, fSys},
	{"SET SESSION sql_mode = ''", KindSet, fSys},
	{"SET GLOBAL max_connections = 10", KindSet, fSys},
	{"SET PERSIST_ONLY max_connections = 10", KindSet, fSys},
	{"SET NAMES utf8mb4", KindSet, fSys},
	{"SET NAMES 'utf8mb4' COLLATE 'utf8mb4_unicode_ci'", KindSet, fSys},
	{"SET CHARACTER SET utf8", KindSet, fSys},
	{"SET CHARSET utf8", KindSet, fSys},
	{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", KindSet, fSys | fTrx},
	{"SET TRANSACTION READ ONLY, ISOLATION LEVEL SERIALIZABLE", KindSet, fSys | fTrx},
	{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", KindSet, fSys},
	{"SET GLOBAL TRANSACTION ISOLATION LEVEL READ COMMITTED", KindSet, fSys},
	{"SET @@transaction_isolation = 'READ-COMMITTED'", KindSet, fSys},
	{"SET ROLE ALL", KindSet, fSys},
	{"SET RESOURCE GROUP rg", KindSet, fSys},
	{"SET STATEMENT max_statement_time=1 FOR SELECT 1", KindSet, FlagSetNotVariable},
	{"SET @a = @@warning_count", KindSet, fUV | fWarn},

	// warnings
	{"SHOW WARNINGS", KindShow, fWarn},
	{"SHOW WARNINGS LIMIT 10", KindShow, fWarn},
	{"show errors", KindShow, fWarn},
	{"SHOW COUNT(*) WARNINGS", KindShow, fWarn},
	{"SHOW COUNT ( * ) ERRORS", KindShow, fWarn},
	{"SELECT @@warning_count", KindSelect, fWarn},
	{"SELECT @@session.error_count", KindSelect, fWarn},
	{"SELECT warning_count FROM t", KindSelect, 0},
	{"GET DIAGNOSTICS @n = NUMBER", KindOther, fWarn | fUV},
	{"GET CURRENT DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT", KindOther, fWarn | fUV},
	{"GET STACKED DIAGNOSTICS @n = ROW_COUNT", KindOther, fWarn | fUV},
	{"SHOW TABLES LIKE 'warnings'", KindShow, 0},

	// the idle timeouts the proxy keeps per client
	{"SELECT @@wait_timeout", KindSelect, FlagClientTimeout},
	{"SELECT @@SESSION.Wait_Timeout, @@local.interactive_timeout", KindSelect, FlagClientTimeout},
	{"SELECT @@global.wait_timeout, @@GLOBAL.interactive_timeout", KindSelect, 0},
	{"SELECT wait_timeout FROM t WHERE x = '@@wait_timeout'", KindSelect, 0},
	{"SET wait_timeout = 10", KindSet, fSys},
	{"SET @@session.wait_timeout = @@global.wait_timeout", KindSet, fSys},
	{"SET @@wait_timeout = @@wait_timeout + 1", KindSet, fSys | FlagClientTimeout},

	// functions
	{"SELECT FOUND_ROWS()", KindSelect, fFR},
	{"SELECT found_rows ()", KindSelect, fFR},
	{"SELECT db.found_rows()", KindSelect, fFR},
	{"SELECT x . found_rows ( )", KindSelect, fFR},
	{"SELECT `found_rows`()", KindSelect, fFR},
	{"SELECT found_rows FROM t", KindSelect, 0},
	{"SELECT t.found_rows, row_count, last_insert_id, connection_id FROM t", KindSelect, 0},
	{"SELECT ROW_COUNT()", KindSelect, fRC},
	{"SELECT row_count /* c */ ()", KindSelect, fRC},
	{"CREATE TABLE t (row_count INT, found_rows INT)", KindCreate, 0},
	{"SELECT LAST_INSERT_ID()", KindSelect, fLII},
	{"SELECT LAST_INSERT_ID( /* nothing */ )", KindSelect, fLII},
	{"SELECT LAST_INSERT_ID(42)", KindSelect, fLII | fLIIA},
	{"UPDATE seq SET id = LAST_INSERT_ID(id + 1)", KindUpdate, fLII | fLIIA},
	{"SELECT CONNECTION_ID()", KindSelect, fCID},
	{"SELECT GET_LOCK('a', 10)", KindSelect, fLock | fSE},
	{"SELECT RELEASE_LOCK('a')", KindSelect, fLock | fSE},
	{"SELECT RELEASE_ALL_LOCKS()", KindSelect, fLock | fSE},
	{"SELECT IS_USED_LOCK('a')", KindSelect, fSE},
	{"SELECT IS_FREE_LOCK('a')", KindSelect, fSE},
	{"SELECT SLEEP(1)", KindSelect, fSE},
	{"SELECT sleep (1)", KindSelect, fSE},
	{"SELECT NEXTVAL(s)", KindSelect, fSE},
	{"SELECT SETVAL(s, 10)", KindSelect, fSE},
	{"SELECT LASTVAL(s)", KindSelect, fSE},
	{"SELECT NEXT VALUE FOR s", KindSelect, fSE},
	{"SELECT PREVIOUS VALUE FOR s", KindSelect, fSE},
	{"SELECT MASTER_POS_WAIT('f', 4)", KindSelect, fSE},
	{"SELECT SOURCE_POS_WAIT('f', 4)", KindSelect, fSE},
	{"SELECT MASTER_GTID_WAIT('0-1-1')", KindSelect, fSE},
	{"SELECT WAIT_FOR_EXECUTED_GTID_SET('x')", KindSelect, fSE},
	{"SELECT UUID_SHORT()", KindSelect, fSE},
	{"SELECT UUID(), NOW(), RAND()", KindSelect, 0},
	{"SELECT sleep FROM t", KindSelect, 0},
	{"SELECT 'SLEEP(1)', \"GET_LOCK(1)\"", KindSelect, 0},
	{"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10", KindSelect, fCalc},
	{"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10; SELECT FOUND_ROWS()", KindSelect, fCalc | fMul | fFR},

	// locking reads
	{"SELECT * FROM t WHERE id=1 FOR UPDATE", KindSelect, fFU},
	{"SELECT * FROM t FOR UPDATE NOWAIT", KindSelect, fFU},
	{"SELECT * FROM t FOR SHARE SKIP LOCKED", KindSelect, fFU},
	{"SELECT * FROM t LOCK IN SHARE MODE", KindSelect, fFU},
	{"select * from t for /* c */ update", KindSelect, fFU},
	{"SELECT `for`, `update` FROM t", KindSelect, 0},
	{"SELECT 'FOR UPDATE'", KindSelect, 0},
	{"INSERT INTO t SELECT * FROM u FOR UPDATE", KindInsert, fFU},
	{"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a=1", KindInsert, 0},
	{"CREATE TRIGGER tr BEFORE UPDATE ON t FOR EACH ROW SET NEW.a = 1", KindCreate, 0},

	// SELECT ... INTO
	{"SELECT a INTO @x FROM t", KindSelect, fInto | fUV},
	{"SELECT a FROM t INTO @x", KindSelect, fInto | fUV},
	{"SELECT * FROM t INTO OUTFILE '/tmp/x'", KindSelect, fInto},
	{"SELECT * FROM t INTO DUMPFILE '/tmp/x'", KindSelect, fInto},
	{"INSERT INTO t SELECT 1", KindInsert, 0},
	{"WITH a AS (SELECT 1) SELECT * FROM a INTO @v", KindSelect, fInto | fUV},

	// temporary tables
	{"CREATE TEMPORARY TABLE t (a INT)", KindCreate, fTmp},
	{"create temporary table if not exists t like u", KindCreate, fTmp},
	{"CREATE OR REPLACE TEMPORARY TABLE t (a INT)", KindCreate, fTmp},
	{"DROP TEMPORARY TABLE t", KindDrop, fTmp},
	{"DROP TEMPORARY TABLE IF EXISTS t", KindDrop, fTmp},
	{"CREATE TEMPORARY SEQUENCE s", KindCreate, fTmp},
	{"CREATE TABLE temporary (a INT)", KindCreate, 0},
	{"GRANT CREATE TEMPORARY TABLES ON db.* TO u", KindGrant, 0},

	// WITH
	{"WITH a AS (SELECT 1) SELECT * FROM a", KindSelect, 0},
	{"with recursive cte (n) as (select 1 union all select n + 1 from cte where n < 5) select * from cte", KindSelect, 0},
	{"WITH a AS (SELECT 1), b AS (SELECT 2) SELECT * FROM a, b", KindSelect, 0},
	{"WITH a AS (SELECT (1)) (SELECT * FROM a)", KindSelect, 0},
	{"WITH a AS (SELECT id FROM t) UPDATE t, a SET t.x = 1 WHERE t.id = a.id", KindUpdate, 0},
	{"WITH a AS (SELECT id FROM t) DELETE FROM t WHERE id IN (SELECT id FROM a)", KindDelete, 0},
	{"WITH a AS (SELECT 1) TABLE a", KindTable, 0},
	{"WITH a AS (SELECT 1 FROM t FOR UPDATE) SELECT * FROM a", KindSelect, fFU},
	{"WITH a AS (SELECT 1) SELECT * FROM a FOR UPDATE", KindSelect, fFU},
	{"WITH a AS (SELECT 1)", KindWith, 0},
	{"WITH", KindWith, 0},
	{"WITH a AS (SELECT 'x)' FROM t) SELECT 1", KindSelect, 0},

	// multiple statements
	{"SELECT 1;", KindSelect, 0},
	{"SELECT 1 ; ", KindSelect, 0},
	{"SELECT 1;;;", KindSelect, 0},
	{"SELECT 1; -- trailing comment", KindSelect, 0},
	{"SELECT 1; /* trailing comment */ ", KindSelect, 0},
	{"SELECT 1; # trailing\n", KindSelect, 0},
	{"SELECT 1; SELECT 2", KindSelect, fMul},
	{"SELECT 1;SELECT 2;", KindSelect, fMul},
	{"SELECT 1; SET autocommit=0", KindSelect, fMul | fSys | fAC},
	{"SET autocommit=0; SELECT 1", KindSet, fMul | fSys | fAC},
	{"SELECT 1; SELECT a INTO @x FROM t", KindSelect, fMul | fUV | fInto},
	{"INSERT INTO t SELECT 1; SELECT a INTO @x FROM t", KindInsert, fMul | fUV | fInto},
	{"; SELECT 1", KindSelect, fMul},
	{"SELECT ';'; ", KindSelect, 0},
	{"SELECT 1; (", KindSelect, fMul},
	{"BEGIN; UPDATE t SET a=1; COMMIT", KindBegin, fMul},

	// stored programs: the ';' of a body do not separate statements
	{"CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END", KindCreate, 0},
	{"CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END;", KindCreate, 0},
	{"CREATE PROCEDURE p() BEGIN SELECT 1; END; SELECT 2", KindCreate, fMul},
	{"CREATE DEFINER=`u`@`%` PROCEDURE p(IN x INT)\nBEGIN\n  DECLARE v INT;\n  IF x > 0 THEN\n    SET v = 1;\n  ELSEIF x < 0 THEN SET v = -1;\n  END IF;\n  lbl: LOOP LEAVE lbl; END LOOP lbl;\n  WHILE v < 10 DO SET v = v + 1; END WHILE;\n  REPEAT SET v = v - 1; UNTIL v < 0 END REPEAT;\n  CASE v WHEN 1 THEN SELECT 1; ELSE SELECT CASE WHEN v THEN 1 END; END CASE;\n  BEGIN SELECT 2; END;\nEND", KindCreate, 0},
	{"CREATE FUNCTION f() RETURNS INT DETERMINISTIC BEGIN RETURN (SELECT CASE WHEN 1 THEN 2 END); END; SELECT f()", KindCreate, fMul},
	{"CREATE FUNCTION f() RETURNS INT RETURN 1; SELECT 2", KindCreate, fMul},
	{"CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW BEGIN UPDATE c SET n = n + 1; INSERT INTO l VALUES (NEW.id); END", KindCreate, 0},
	{"CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO BEGIN DELETE FROM t; DELETE FROM u; END", KindCreate, 0},
	{"ALTER EVENT e DO BEGIN DELETE FROM t; DELETE FROM u; END", KindAlter, 0},
	{"CREATE TABLE t (`begin` INT); SELECT 1", KindCreate, fMul},
	{"CREATE TABLE t (a INT) AS SELECT CASE WHEN 1 THEN 2 END; SELECT 1", KindCreate, fMul},
	{"BEGIN NOT ATOMIC SELECT 1; SELECT 2; END", KindOther, 0},
	{"BEGIN NOT ATOMIC SELECT 1; END; SELECT 2", KindOther, fMul},
	{"CREATE PACKAGE pkg PROCEDURE p1(); FUNCTION f1() RETURNS INT; END", KindCreate, 0},
	{"CREATE PACKAGE BODY pkg PROCEDURE p1() BEGIN SELECT 1; END; END; SELECT 1", KindCreate, fMul},
	{"CREATE PROCEDURE p() BEGIN SELECT 1;", KindCreate, 0},
	{"CREATE PROCEDURE p() END; SELECT 1", KindCreate, fMul},

	// routing hints
	{"/* shardgate:primary */ SELECT 1", KindSelect, fHP},
	{"SELECT /*+ shardgate:replica */ 1", KindSelect, fHR},
	{"SELECT 1 /*+SHARDGATE:Replica*/", KindSelect, fHR},
	{"/*   shardgate:primary reason: fresh */ SELECT 1", KindSelect, fHP},
	{"/* shardgate:primaryx */ SELECT 1", KindSelect, 0},
	{"/* shardgate: primary */ SELECT 1", KindSelect, 0},
	{"/* see shardgate:primary */ SELECT 1", KindSelect, 0},
	{"-- shardgate:primary\nSELECT 1", KindSelect, 0},
	{"SELECT '/* shardgate:primary */'", KindSelect, 0},
	{"/* shardgate:primar", KindOther, 0},
	{"/*+ shardgate:replica */ UPDATE t SET a = 1", KindUpdate, fHR},

	// KILL forms are tested in TestClassifyKill
	{"KILL 5", KindKill, 0},
	{"KILL QUERY 5", KindKill, 0},
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases {
		got := Classify([]byte(tc.sql))
		if got.Kind != tc.kind || got.Flags != tc.flags {
			t.Errorf("Classify(%q) = %v [%v], want %v [%v]", tc.sql, got.Kind, got.Flags, tc.kind, tc.flags)
		}
	}
}

func TestClassifyKill(t *testing.T) {
	tests := []struct {
		sql  string
		want Stmt
	}{
		{"KILL 5", Stmt{Kind: KindKill, KillID: 5, KillHasID: true}},
		{"kill 123456789", Stmt{Kind: KindKill, KillID: 123456789, KillHasID: true}},
		{"KILL CONNECTION 7", Stmt{Kind: KindKill, KillID: 7, KillHasID: true}},
		{"KILL QUERY 7", Stmt{Kind: KindKill, KillQuery: true, KillID: 7, KillHasID: true}},
		{"kill query 7;", Stmt{Kind: KindKill, KillQuery: true, KillID: 7, KillHasID: true}},
		{"KILL /* c */ QUERY /* c */ 7 -- c", Stmt{Kind: KindKill, KillQuery: true, KillID: 7, KillHasID: true}},
		{"/*!KILL 9*/", Stmt{Kind: KindKill, KillID: 9, KillHasID: true}},
		{"KILL QUERY ID 42", Stmt{Kind: KindKill, KillQuery: true, KillID: 42, KillByQueryID: true}},
		{"KILL HARD QUERY ID 42;", Stmt{Kind: KindKill, KillQuery: true, KillID: 42, KillByQueryID: true}},
		{"KILL QUERY ID @q", Stmt{Kind: KindKill, Flags: FlagUserVar, KillQuery: true}},
		{"KILL HARD QUERY 3", Stmt{Kind: KindKill, KillQuery: true, KillID: 3, KillHasID: true}},
		{"KILL SOFT CONNECTION 3", Stmt{Kind: KindKill, KillID: 3, KillHasID: true}},
		{"KILL 18446744073709551615", Stmt{Kind: KindKill, KillID: 18446744073709551615, KillHasID: true}},
		{"KILL 18446744073709551616", Stmt{Kind: KindKill}},
		{"KILL 99999999999999999999999", Stmt{Kind: KindKill}},
		{"KILL", Stmt{Kind: KindKill}},
		{"KILL QUERY", Stmt{Kind: KindKill, KillQuery: true}},
		{"KILL QUERY ID", Stmt{Kind: KindKill, KillQuery: true}},
		{"KILL USER bob", Stmt{Kind: KindKill}},
		{"KILL QUERY USER bob", Stmt{Kind: KindKill, KillQuery: true}},
		{"KILL @id", Stmt{Kind: KindKill, Flags: FlagUserVar}},
		{"KILL 1+2", Stmt{Kind: KindKill}},
		{"KILL 1.5", Stmt{Kind: KindKill}},
		{"KILL 0x10", Stmt{Kind: KindKill}},
		{"KILL 12abc", Stmt{Kind: KindKill}},
		{"KILL '5'", Stmt{Kind: KindKill}},
		{"KILL (5)", Stmt{Kind: KindKill}},
		{"KILL 5; SELECT 1", Stmt{Kind: KindKill, Flags: FlagMultiStatement, KillID: 5, KillHasID: true}},
		{"SELECT 1; KILL 5", Stmt{Kind: KindSelect, Flags: FlagMultiStatement}},
		{"SELECT 5", Stmt{Kind: KindSelect, NoTable: true}},
	}
	for _, tc := range tests {
		if got := withoutDigest(Classify([]byte(tc.sql))); got != tc.want {
			t.Errorf("Classify(%q) = %+v, want %+v", tc.sql, got, tc.want)
		}
	}
}

func TestIsReadOnly(t *testing.T) {
	tests := []struct {
		sql  string
		want bool
	}{
		{"SELECT c FROM sbtest1 WHERE id=5000", true},
		{"(SELECT 1) UNION (SELECT 2)", true},
		{"WITH a AS (SELECT 1) SELECT * FROM a", true},
		{"SHOW TABLES", true},
		{"EXPLAIN SELECT 1", true},
		{"DESC t", true},
		{"VALUES ROW(1)", true},
		{"TABLE t", true},
		{"SELECT @@version", true},
		{"/*!40101 SELECT 1 */", true},
		{"/* shardgate:primary */ SELECT 1", true}, // hints are the router's business
		{"/* shardgate:replica */ SELECT 1", true},

		{"SELECT * FROM t FOR UPDATE", false},
		{"SELECT * FROM t LOCK IN SHARE MODE", false},
		{"SELECT a INTO OUTFILE '/tmp/x' FROM t", false},
		{"SELECT @a", false},
		{"SELECT @a := 1", false},
		{"SELECT SLEEP(1)", false},
		{"SELECT GET_LOCK('a', 1)", false},
		{"SELECT NEXTVAL(s)", false},
		{"SELECT FOUND_ROWS()", false},
		{"SELECT SQL_CALC_FOUND_ROWS * FROM t", false},
		{"SELECT LAST_INSERT_ID()", false},
		{"SELECT ROW_COUNT()", false},
		{"SELECT CONNECTION_ID()", false},
		{"SELECT @@warning_count", false},
		{"SHOW WARNINGS", false},
		{"SELECT 1; DELETE FROM t", false},
		{"ANALYZE TABLE t", false},
		{"EXPLAIN ANALYZE SELECT 1", false},
		{"WITH a AS (SELECT 1) UPDATE t SET x = 1", false},
		{"WITH a AS (SELECT 1)", false},
		{"INSERT INTO t VALUES (1)", false},
		{"UPDATE t SET a = 1", false},
		{"SET autocommit = 0", false},
		{"BEGIN", false},
		{"CALL p()", false},
		{"DO 1", false},
		{"", false},
	}
	for _, tc := range tests {
		s := Classify([]byte(tc.sql))
		if got := IsReadOnly(s); got != tc.want {
			t.Errorf("IsReadOnly(Classify(%q)) = %v, want %v (kind %v, flags %v)", tc.sql, got, tc.want, s.Kind, s.Flags)
		}
	}
}

func TestIsWrite(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want bool
	}{
		// Session set-up and reads of session state are not writes.
		{"SET NAMES utf8mb4", false},
		{"SET autocommit=1", false},
		{"SET SESSION sql_mode='STRICT_ALL_TABLES', time_zone='+00:00'", false},
		{"SET @@session.transaction_isolation = 'READ-COMMITTED'", false},
		{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", false},
		{"SET @x = (SELECT COUNT(*) FROM t)", false},
		{"/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='' */", false},
		{"SET GLOBAL max_connections = 10", false},
		{"SELECT 1", false},
		{"SELECT @x", false},
		{"SELECT @x := 1", false},
		{"SELECT LAST_INSERT_ID()", false},
		{"SELECT FOUND_ROWS()", false},
		{"SHOW WARNINGS", false},
		{"SELECT CONNECTION_ID()", false},
		{"EXPLAIN SELECT 1", false},

		{"INSERT INTO t VALUES (1)", true},
		{"UPDATE t SET a = 1", true},
		{"SET PASSWORD = 'x'", true},
		{"SET DEFAULT ROLE r TO 'u'@'h'", true},
		{"SET STATEMENT max_statement_time=1 FOR UPDATE t SET a = @v", true},
		{"SET @x = NEXTVAL(s)", true},
		{"SET NAMES utf8mb4; INSERT INTO t VALUES (1)", true},
		{"SELECT NEXTVAL(s)", true},
		{"SELECT * FROM t FOR UPDATE", true},
		{"SELECT a INTO OUTFILE '/tmp/x' FROM t", true},
		{"ANALYZE TABLE t", true},
		{"CREATE TEMPORARY TABLE t (a INT)", true},
		{"COMMIT", true},
		{"DO 1", true},
		{"CALL p()", true},
		{"", true},
	} {
		if got := IsWrite(Classify([]byte(c.sql))); got != c.want {
			t.Errorf("IsWrite(%q) = %v, want %v", c.sql, got, c.want)
		}
	}
}

func TestKindString(t *testing.T) {
	seen := map[string]bool{}
	for k := KindOther; k < kindCount; k++ {
		s := k.String()
		if s == "" || strings.HasPrefix(s, "Kind(") || seen[s] {
			t.Errorf("Kind(%d).String() = %q", k, s)
		}
		seen[s] = true
	}
	if got := kindCount.String(); got != "Kind(44)" {
		t.Errorf("kindCount.String() = %q", got)
	}
	if KindStop != 43 || KindSelect.String() != "Select" || KindLoadData.String() != "LoadData" {
		t.Errorf("unexpected kind numbering or names")
	}
}

func TestFlags(t *testing.T) {
	if len(flagNames) != 25 || flagsEnd != 1<<len(flagNames) {
		t.Fatalf("flagNames has %d names for flagsEnd %#x", len(flagNames), uint32(flagsEnd))
	}
	f := FlagUserVar | FlagForUpdate
	if !f.Has(FlagUserVar) || !f.Has(FlagUserVar|FlagForUpdate) || f.Has(FlagUserVar|FlagLocal) || !f.Has(0) {
		t.Errorf("Has is wrong")
	}
	if got := f.String(); got != "UserVar|ForUpdate" {
		t.Errorf("String() = %q", got)
	}
	if got := Flags(0).String(); got != "0" {
		t.Errorf("String() = %q", got)
	}
	if got := (FlagAnalyzeExec | 1<<31).String(); got != "AnalyzeExec|0x80000000" {
		t.Errorf("String() = %q", got)
	}
}

func TestKeywordTable(t *testing.T) {
	for k := kwNone + 1; k < kwCount; k++ {
		name := kwNames[k]
		for _, v := range []string{name, strings.ToLower(name)} {
			b := []byte(v)
			if got := lookupKw(b, hashSpan(b)); got != k {
				t.Errorf("lookupKw(%q) = %d, want %d", v, got, k)
			}
		}
	}
	for _, v := range []string{"", "SELEC", "SELECTS", "FOO", "SELECT\x00", strings.Repeat("A", 100)} {
		b := []byte(v)
		if got := lookupKw(b, hashSpan(b)); got != kwNone {
			t.Errorf("lookupKw(%q) = %d, want none", v, got)
		}
	}
}

// benchStatements are typical statements for the benchmark and the
// allocation test.
var benchStatements = []struct{ name, sql string }{
	{"PointSelect", "SELECT c FROM sbtest1 WHERE id=5000"},
	{"InsertString", "INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 5015, '68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441', '22195207048-70116052123-74140395089-76317954521-98694025897')"},
	{"LongSelectComment", "/* app=checkout, route=/cart/view, request_id=4f1c2b9e */ SELECT o.id, o.created_at, o.status, c.name, c.email, SUM(i.qty * i.price) AS total FROM orders o JOIN customers c ON c.id = o.customer_id JOIN order_items i ON i.order_id = o.id WHERE o.customer_id = 12345 AND o.status IN ('open', 'paid') AND o.created_at >= '2024-01-01 00:00:00' GROUP BY o.id, o.created_at, o.status, c.name, c.email ORDER BY o.created_at DESC LIMIT 20"},
	{"SetAutocommit", "SET autocommit=0"},
}

func BenchmarkClassify(b *testing.B) {
	for _, bs := range benchStatements {
		sql := []byte(bs.sql)
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(sql)))
			for b.Loop() {
				benchSink = Classify(sql)
			}
		})
	}
}

var benchSink Stmt

func TestClassifyZeroAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	inputs := make([][]byte, 0, len(benchStatements)+len(classifyCases))
	for _, bs := range benchStatements {
		inputs = append(inputs, []byte(bs.sql))
	}
	for _, tc := range classifyCases {
		inputs = append(inputs, []byte(tc.sql))
	}
	for _, in := range inputs {
		allocs := testing.AllocsPerRun(100, func() {
			s := Classify(in)
			benchSink = s
			_ = IsReadOnly(s)
			_ = s.Kind.String()
		})
		if allocs != 0 {
			t.Errorf("Classify(%q): %v allocs/op, want 0", in, allocs)
		}
	}
}

// TestClassifyLargeInputs feeds multi-megabyte pathological inputs: any
// quadratic behaviour in the lexer would make it time out.
func TestClassifyLargeInputs(t *testing.T) {
	const n = 4 << 20
	tests := []struct {
		name string
		sql  string
		want Stmt
	}{
		{"escaped backslashes", "SELECT '" + strings.Repeat(`\\`, n/2) + "', @x", Stmt{Kind: KindSelect, Flags: FlagUserVar, NoTable: true}},
		{"escaped quotes", "SELECT '" + strings.Repeat(`\'`, n/2) + "', @x", Stmt{Kind: KindSelect, Flags: FlagUserVar, NoTable: true}},
		{"escapes, quote at the end", "SELECT '" + strings.Repeat(`\a`, n/2) + "'", Stmt{Kind: KindSelect, NoTable: true}},
		{"escapes, unterminated", "SELECT '" + strings.Repeat(`\a`, n/2), Stmt{Kind: KindSelect, NoTable: true}},
		{"doubled quotes", "SELECT '" + strings.Repeat(`''`, n/2) + "', @x", Stmt{Kind: KindSelect, Flags: FlagUserVar, NoTable: true}},
		{"doubled backticks", "SELECT `" + strings.Repeat("``", n/2) + "`, @x", Stmt{Kind: KindSelect, Flags: FlagUserVar, NoTable: true}},
		{"stars in a comment", "SELECT /*" + strings.Repeat("*", n) + "*/ @x", Stmt{Kind: KindSelect, Flags: FlagUserVar, NoTable: true}},
		{"unterminated comment", "SELECT /*" + strings.Repeat("* /", n/3), Stmt{Kind: KindSelect, NoTable: true}},
		{"nested parentheses", strings.Repeat("(", n/2) + "SELECT 1" + strings.Repeat(")", n/2), Stmt{Kind: KindSelect, NoTable: true}},
		{"semicolons", "SELECT 1" + strings.Repeat(";", n) + "SELECT 2", Stmt{Kind: KindSelect, Flags: FlagMultiStatement}},
		{"statements", strings.Repeat("SELECT 1;", n/9), Stmt{Kind: KindSelect, Flags: FlagMultiStatement}},
		{"executable comments", strings.Repeat("/*!50700 */", n/11) + "SELECT 1", Stmt{Kind: KindSelect, NoTable: true}},
		{"user variables", "SELECT " + strings.Repeat("@a,", n/3), Stmt{Kind: KindSelect, Flags: FlagUserVar, NoTable: true}},
		{"long word", "SELECT " + strings.Repeat("a", n), Stmt{Kind: KindSelect, NoTable: true}},
		{"with", "WITH " + strings.Repeat("a AS (SELECT 1), ", n/18) + "SELECT 1", Stmt{Kind: KindSelect}},
	}
	for _, tc := range tests {
		if got := withoutDigest(Classify([]byte(tc.sql))); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// withoutDigest returns s with its digest cleared, for comparisons of
// the classification alone (digest_test.go tests the digest).
func withoutDigest(s Stmt) Stmt {
	s.Digest = 0
	return s
}

// TestExecutableCommentsForLaterVersions: once the server's version is
// known, an executable comment for a later version is a comment, as that
// server reads it; before, every one is code.
func TestExecutableCommentsForLaterVersions(t *testing.T) {
	// mariadb-dump's first line as the mariadb client sends it (it
	// takes the "\\-" of "/*M!999999\\- enable …" for its own command).
	sandbox := "/*M!999999 enable the sandbox mode */ \n/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */"
	cases := []struct {
		sql        string
		unknown    Kind // with the version unknown
		known      Kind // with 10.11.19
		knownFlags Flags
	}{
		{sandbox, KindOther, KindSet, FlagUserVar},
		{"/*!110000 SELECT 1 */ SET @a = 1", KindSelect, KindSet, FlagUserVar},
		{"/*M!110000 SELECT 1 */ SET @a = 1", KindSelect, KindSet, FlagUserVar},
		{"/*!100000 SELECT 1 */", KindSelect, KindSelect, 0},
		{"/*M!101119 SELECT 1 */", KindSelect, KindSelect, 0},
		{"/*M!101120 SELECT 1 */ DO 1", KindSelect, KindDo, 0},
		{"/*!99999 SELECT 1 */", KindSelect, KindSelect, 0},
		{"SELECT 1 /*!999999 ; DROP TABLE t */", KindSelect, KindSelect, 0},
	}
	t.Cleanup(func() { serverVersion.Store(0) })
	for _, v := range []string{"", "5.5.5-10.11.19-MariaDB-0+deb12u1-log"} {
		SetServerVersion(v)
		for _, c := range cases {
			st := Classify([]byte(c.sql))
			want := c.unknown
			if v != "" {
				want = c.known
				if st.Flags != c.knownFlags {
					t.Errorf("version %q: Classify(%q) flags %b, want %b", v, c.sql, st.Flags, c.knownFlags)
				}
			}
			if st.Kind != want {
				t.Errorf("version %q: Classify(%q) = %v, want %v", v, c.sql, st.Kind, want)
			}
		}
	}
	for v, want := range map[string]int32{"8.0.36": 80036, "10.5.9-MariaDB": 100509, "5.5.5-11.4.2-MariaDB": 110402, "8.0.36-shardgate": 80036, "garbage": 0, "10": 0} {
		SetServerVersion(v)
		if got := serverVersion.Load(); got != want {
			t.Errorf("SetServerVersion(%q): %d, want %d", v, got, want)
		}
	}
}

func TestClassifyProcesslist(t *testing.T) {
	const (
		show  = ProcesslistShow
		full  = ProcesslistShowFull
		table = ProcesslistTable
		name  = ProcesslistName
	)
	tests := []struct {
		sql  string
		kind Kind
		want Processlist
	}{
		{"SHOW PROCESSLIST", KindShow, show},
		{"show processlist;", KindShow, show},
		{"SHOW FULL PROCESSLIST", KindShow, full},
		{"show /* c */ full -- c\n processlist", KindShow, full},
		{"/*!SHOW PROCESSLIST*/", KindShow, show},
		{"SELECT * FROM information_schema.PROCESSLIST", KindSelect, table},
		{"select id from INFORMATION_SCHEMA . processlist where id = connection_id()", KindSelect, table},
		{"SELECT * FROM `information_schema`.`PROCESSLIST`", KindSelect, table},
		{"SELECT * FROM `information_schema`.processlist p", KindSelect, table},
		{"SELECT * FROM information_schema.`processlist`", KindSelect, table},
		{"SELECT information_schema.processlist.id FROM information_schema.processlist", KindSelect, table},
		{"SELECT * FROM PROCESSLIST", KindSelect, name},
		{"SELECT * FROM `processlist`", KindSelect, name},
		{"SELECT * FROM information_schema.PROCESSLIST AS processlist", KindSelect, table | name},
		{"SELECT 1; SHOW PROCESSLIST", KindSelect, show},
		{"INSERT INTO t SELECT * FROM information_schema.PROCESSLIST", KindInsert, table},
		{"SHOW COLUMNS FROM information_schema.PROCESSLIST", KindShow, table},
		{"SHOW COLUMNS FROM PROCESSLIST", KindShow, name},
		{"SHOW FULL COLUMNS FROM PROCESSLIST", KindShow, name},
		{"SHOW CREATE TABLE PROCESSLIST", KindShow, name},

		// not the list of sessions
		{"SELECT * FROM mydb.processlist", KindSelect, 0},
		{"SELECT * FROM `mydb`.`processlist`", KindSelect, 0},
		{"SELECT * FROM information_schema.PROCESSLISTS", KindSelect, 0},
		{"SELECT 'information_schema.PROCESSLIST'", KindSelect, 0},
		{"SELECT 1 /* SHOW PROCESSLIST */", KindSelect, 0},
		{"SELECT `information_schema.PROCESSLIST`", KindSelect, 0},
		{"SHOW PROCESSLISTS", KindShow, 0},
		{"SHOW STATUS", KindShow, 0},
		{"SELECT * FROM information_schema.TABLES", KindSelect, 0},
	}
	for _, tc := range tests {
		got := Classify([]byte(tc.sql))
		if got.Kind != tc.kind || got.Processlist != tc.want {
			t.Errorf("Classify(%q): kind %v, processlist %b; want %v, %b", tc.sql, got.Kind, got.Processlist, tc.kind, tc.want)
		}
	}
}

func TestPreparedText(t *testing.T) {
	tests := []struct {
		sql, want string
		ok        bool
	}{
		{"PREPARE s FROM 'SHOW PROCESSLIST'", "SHOW PROCESSLIST", true},
		{"prepare `s` from \"SELECT * FROM information_schema.processlist WHERE user = 'a\\\\'b'\"", "SELECT * FROM information_schema.processlist WHERE user = 'a\\'b'", true},
		{"PREPARE s FROM 'SHOW ' /* c */ 'PROCESSLIST';", "SHOW PROCESSLIST", true},
		{"EXECUTE IMMEDIATE 'SHOW FULL PROCESSLIST'", "SHOW FULL PROCESSLIST", true},
		{"PREPARE s FROM @q", "", false},
		{"EXECUTE s", "", false},
		{"EXECUTE IMMEDIATE @q", "", false},
		{"SELECT 'PREPARE s FROM x'", "", false},
		{"PREPARE", "", false},
	}
	for _, tc := range tests {
		got, ok := PreparedText([]byte(tc.sql))
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("PreparedText(%q) = %q, %v; want %q, %v", tc.sql, got, ok, tc.want, tc.ok)
		}
	}
}

// TestClassifyNoTable: statements that read no table (Stmt.NoTable),
// whose run leaves the previous statement's diagnostics on MariaDB, as
// found on the server (a statement whose table list is not empty clears
// them: FROM a table or a derived table, WITH, a sequence).
func TestClassifyNoTable(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"SELECT 1", true},
		{"select 1 from dual", true},
		{"SELECT 1 FROM DUAL WHERE 1", true},
		{"SELECT @@warning_count, @@error_count", true},
		{"SELECT 1/0", true},
		{"(SELECT 1) UNION (SELECT 2)", true},
		{"SELECT (SELECT 1)", true},
		{"SELECT f()", true}, // a stored function's tables do not count
		{"SELECT 1 INTO @x", true},
		{"SELECT SLEEP(0), GET_LOCK('a', 0)", true},
		{"SELECT /* FROM t */ 'FROM t' -- FROM t", true},
		{"DO 1", true},
		{"SET @a = 1", true},
		{"SET NAMES utf8mb4", true},
		{"SET autocommit = 1", true},
		{"VALUES (1), (2)", true},
		{"BEGIN", true},
		{"START TRANSACTION READ ONLY", true},
		{"COMMIT", true},
		{"ROLLBACK", true},
		{"SAVEPOINT a", true},
		{"ROLLBACK TO SAVEPOINT a", true},
		{"RELEASE SAVEPOINT a", true},
		{"USE db", true},
		{"SELECT * FROM t", false},
		{"SELECT 1 FROM `dual`", false},
		{"SELECT 1 /*!FROM t */", false},
		{"SELECT 1 FROM DUAL WHERE EXISTS (SELECT 1 FROM t)", false},
		{"SELECT * FROM (SELECT 1) d", false},
		{"WITH c AS (SELECT 1) SELECT * FROM c", false},
		{"WITH c AS (SELECT 1) SELECT 2", false},
		{"SET @a = (SELECT COUNT(*) FROM t)", false},
		{"DO (SELECT 1 FROM t LIMIT 1)", false},
		{"SELECT NEXTVAL(s)", false},
		{"SELECT NEXT VALUE FOR s", false},
		{"SELECT LASTVAL(s)", false},
		{"SELECT 1; SELECT 2", false},
		{"SET PASSWORD = PASSWORD('x')", false},
		{"SET STATEMENT max_statement_time = 1 FOR SELECT 1", false},
		{"SHOW WARNINGS", false},
		{"SHOW TABLES", false},
		{"INSERT INTO t VALUES (1)", false},
		{"CALL p()", false},
		{"KILL 5", false},
		{"TABLE t", false},
	} {
		if got := Classify([]byte(tc.sql)).NoTable; got != tc.want {
			t.Errorf("Classify(%q).NoTable = %v, want %v", tc.sql, got, tc.want)
		}
	}
}
