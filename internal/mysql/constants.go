// Package mysql implements the MySQL client/server wire protocol: packet
// framing, handshake and authentication exchanges, OK/ERR/EOF packets, and the
// pieces of result sets a proxy must understand. It knows nothing of routing.
package mysql

// Capability flags (CLIENT_*), as negotiated in the handshake.
const (
	ClientLongPassword               uint32 = 1 << 0
	ClientFoundRows                  uint32 = 1 << 1
	ClientLongFlag                   uint32 = 1 << 2
	ClientConnectWithDB              uint32 = 1 << 3
	ClientNoSchema                   uint32 = 1 << 4
	ClientCompress                   uint32 = 1 << 5
	ClientODBC                       uint32 = 1 << 6
	ClientLocalFiles                 uint32 = 1 << 7
	ClientIgnoreSpace                uint32 = 1 << 8
	ClientProtocol41                 uint32 = 1 << 9
	ClientInteractive                uint32 = 1 << 10
	ClientSSL                        uint32 = 1 << 11
	ClientIgnoreSIGPIPE              uint32 = 1 << 12
	ClientTransactions               uint32 = 1 << 13
	ClientReserved                   uint32 = 1 << 14
	ClientSecureConnection           uint32 = 1 << 15
	ClientMultiStatements            uint32 = 1 << 16
	ClientMultiResults               uint32 = 1 << 17
	ClientPSMultiResults             uint32 = 1 << 18
	ClientPluginAuth                 uint32 = 1 << 19
	ClientConnectAttrs               uint32 = 1 << 20
	ClientPluginAuthLenencClientData uint32 = 1 << 21
	ClientCanHandleExpiredPasswords  uint32 = 1 << 22
	ClientSessionTrack               uint32 = 1 << 23
	ClientDeprecateEOF               uint32 = 1 << 24
	ClientOptionalResultsetMetadata  uint32 = 1 << 25
	ClientQueryAttributes            uint32 = 1 << 27
	ClientSSLVerifyServerCert        uint32 = 1 << 30
	// ClientMySQL is the bit MariaDB servers clear to announce MariaDB
	// extended capabilities; clients set it to say they are not MariaDB-only.
	ClientMySQL uint32 = 1
)

// Commands (COM_*): the first byte of every command packet.
const (
	ComSleep            byte = 0x00
	ComQuit             byte = 0x01
	ComInitDB           byte = 0x02
	ComQuery            byte = 0x03
	ComFieldList        byte = 0x04
	ComCreateDB         byte = 0x05
	ComDropDB           byte = 0x06
	ComRefresh          byte = 0x07
	ComShutdown         byte = 0x08
	ComStatistics       byte = 0x09
	ComProcessInfo      byte = 0x0a
	ComConnect          byte = 0x0b
	ComProcessKill      byte = 0x0c
	ComDebug            byte = 0x0d
	ComPing             byte = 0x0e
	ComTime             byte = 0x0f
	ComDelayedInsert    byte = 0x10
	ComChangeUser       byte = 0x11
	ComBinlogDump       byte = 0x12
	ComTableDump        byte = 0x13
	ComConnectOut       byte = 0x14
	ComRegisterSlave    byte = 0x15
	ComStmtPrepare      byte = 0x16
	ComStmtExecute      byte = 0x17
	ComStmtSendLongData byte = 0x18
	ComStmtClose        byte = 0x19
	ComStmtReset        byte = 0x1a
	ComSetOption        byte = 0x1b
	ComStmtFetch        byte = 0x1c
	ComDaemon           byte = 0x1d
	ComBinlogDumpGTID   byte = 0x1e
	ComResetConnection  byte = 0x1f
)

// Server status flags (SERVER_*), carried by OK and EOF packets.
const (
	StatusInTrans            uint16 = 0x0001
	StatusAutocommit         uint16 = 0x0002
	StatusMoreResultsExists  uint16 = 0x0008
	StatusNoGoodIndexUsed    uint16 = 0x0010
	StatusNoIndexUsed        uint16 = 0x0020
	StatusCursorExists       uint16 = 0x0040
	StatusLastRowSent        uint16 = 0x0080
	StatusDBDropped          uint16 = 0x0100
	StatusNoBackslashEscapes uint16 = 0x0200
	StatusMetadataChanged    uint16 = 0x0400
	StatusQueryWasSlow       uint16 = 0x0800
	StatusPSOutParams        uint16 = 0x1000
	StatusInTransReadonly    uint16 = 0x2000
	StatusSessionStateChange uint16 = 0x4000
)

// Session state tracker types in OK packets (SESSION_TRACK_*).
const (
	TrackSystemVariables            byte = 0x00
	TrackSchema                     byte = 0x01
	TrackStateChange                byte = 0x02
	TrackGTIDs                      byte = 0x03
	TrackTransactionCharacteristics byte = 0x04
	TrackTransactionState           byte = 0x05
)

// First bytes that identify generic response packets.
const (
	HeaderOK          byte = 0x00
	HeaderLocalInfile byte = 0xfb
	HeaderEOF         byte = 0xfe
	HeaderErr         byte = 0xff
	HeaderAuthMore    byte = 0x01
	HeaderAuthSwitch  byte = 0xfe
)

// Cursor flags of COM_STMT_EXECUTE.
const (
	CursorTypeNoCursor   byte = 0x00
	CursorTypeReadOnly   byte = 0x01
	CursorTypeForUpdate  byte = 0x02
	CursorTypeScrollable byte = 0x04
)

// MaxPayload is the largest payload one packet frame carries; longer payloads
// are split into frames of exactly this size followed by a shorter one.
const MaxPayload = 1<<24 - 1

// Field types used when the proxy itself builds result sets.
const (
	TypeDecimal    byte = 0x00
	TypeTiny       byte = 0x01
	TypeShort      byte = 0x02
	TypeLong       byte = 0x03
	TypeFloat      byte = 0x04
	TypeDouble     byte = 0x05
	TypeNull       byte = 0x06
	TypeTimestamp  byte = 0x07
	TypeLongLong   byte = 0x08
	TypeInt24      byte = 0x09
	TypeDate       byte = 0x0a
	TypeTime       byte = 0x0b
	TypeDateTime   byte = 0x0c
	TypeYear       byte = 0x0d
	TypeVarchar    byte = 0x0f
	TypeBit        byte = 0x10
	TypeJSON       byte = 0xf5
	TypeNewDecimal byte = 0xf6
	TypeEnum       byte = 0xf7
	TypeSet        byte = 0xf8
	TypeTinyBlob   byte = 0xf9
	TypeMediumBlob byte = 0xfa
	TypeLongBlob   byte = 0xfb
	TypeBlob       byte = 0xfc
	TypeVarString  byte = 0xfd
	TypeString     byte = 0xfe
	TypeGeometry   byte = 0xff
)

// CollationUTF8MB4GeneralCI is the collation id the proxy uses on backend
// connections until a session asks for another.
const (
	CollationUTF8MB4GeneralCI byte = 45
	CollationBinary           byte = 63
)
