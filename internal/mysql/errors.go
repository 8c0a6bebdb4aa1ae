package mysql

import (
	"errors"
	"fmt"
)

// SQLError is an error as MySQL reports it: a code, a SQLSTATE and a message.
// Errors the proxy creates itself use real MySQL codes where one fits, so
// clients react to them as they would to the server.
type SQLError struct {
	Code    uint16
	State   string
	Message string
}

func (e *SQLError) Error() string {
	return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.State, e.Message)
}

// IsSQLError reports whether err is (or wraps) the server's answer, as
// against a failure of the connection: the connection is still usable.
func IsSQLError(err error) bool {
	var se *SQLError
	return errors.As(err, &se)
}

// HasErrorCode reports whether err is (or wraps) the server's error with
// one of codes.
func HasErrorCode(err error, codes ...uint16) bool {
	var se *SQLError
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.Code == c {
			return true
		}
	}
	return false
}

// NewError builds an SQLError with a formatted message.
func NewError(code uint16, state, format string, args ...any) *SQLError {
	return &SQLError{Code: code, State: state, Message: fmt.Sprintf(format, args...)}
}

// Error codes used by the proxy (the numbers MySQL uses for the same cases).
const (
	ERConCount          uint16 = 1040 // too many connections
	ERHandshake         uint16 = 1043 // bad handshake
	ERAccessDenied      uint16 = 1045
	ERNoDB              uint16 = 1046
	ERUnknownCom        uint16 = 1047
	ERBadDB             uint16 = 1049
	ERServerShutdown    uint16 = 1053
	ERParse             uint16 = 1064
	ERNetPacketTooLarge uint16 = 1153
	ERNetReadError      uint16 = 1158
	// ERNetPacketsOutOfOrder is what the server answers (and closes after)
	// a frame with the wrong sequence id, or bytes that are not MySQL.
	ERNetPacketsOutOfOrder uint16 = 1156
	// ERConnectionKilled (MariaDB's "Connection was killed") is what the
	// proxy answers when the backend connection died under a statement.
	// Not 2013 (CR_SERVER_LOST): codes 2000-2999 belong to client
	// libraries, and libmariadb turns an ERR packet carrying one into
	// 2027 "Received malformed packet".
	ERConnectionKilled   uint16 = 1927
	ERNetReadInterrupted uint16 = 1159
	ERNetErrorOnWrite    uint16 = 1160
	ERNotAllowedCommand  uint16 = 1148
	ERUnknownError       uint16 = 1105
	ERNoSuchThread       uint16 = 1094
	ERKillDenied         uint16 = 1095
	ERQueryInterrupted   uint16 = 1317
	ERUnknownStmtHandler uint16 = 1243
	ERMaxPreparedStmt    uint16 = 1461
	ERNotSupportedYet    uint16 = 1235
	// EROutOfSortMemory (HY001): a merge across shards past its memory
	// budget.
	EROutOfSortMemory uint16 = 1038
	// ERWrongColumnCount is MySQL's "The used SELECT statements have a
	// different number of columns" (21000): shards whose parts of one
	// result set disagree.
	ERWrongColumnCount    uint16 = 1222
	ERWrongArguments      uint16 = 1210
	ERErrorDuringCommit   uint16 = 1180
	ERNewAbortingConn     uint16 = 1184
	ERAbortingConnection  uint16 = 1152
	ERSecureTransport     uint16 = 3159 // connections using insecure transport are prohibited
	ERMalformedPacket     uint16 = 1835
	ERLockWaitTimeout     uint16 = 1205
	ERClientInteractionTO uint16 = 4031 // idle client disconnected (MySQL 8.0.24+)
	ERNetUncompressError  uint16 = 1157
	ERNetWriteInterrupted uint16 = 1161
)

// ClosesConnection reports the server errors after which the server closes
// the connection (packet too large or garbled, network errors, KILL,
// shutdown, idle timeout): the error answers the statement, and the
// connection that carried it is gone. A proxy must give that connection to
// nobody else.
func ClosesConnection(code uint16) bool {
	switch code {
	case ERNetPacketTooLarge, ERNetPacketsOutOfOrder, ERNetUncompressError, ERNetReadError,
		ERNetReadInterrupted, ERNetErrorOnWrite, ERNetWriteInterrupted, ERConnectionKilled,
		ERServerShutdown, ERClientInteractionTO, ERNewAbortingConn, ERAbortingConnection:
		return true
	}
	return false
}

// Well-known SQLSTATE values.
const (
	StateGeneral          = "HY000"
	StateAccessDenied     = "28000"
	StateConnFailure      = "08S01"
	StateConnRejected     = "08004"
	StateSyntax           = "42000"
	StateNoDB             = "3D000"
	StateFeatureNotSupp   = "0A000"
	StateQueryInterrupted = "70100"
)
