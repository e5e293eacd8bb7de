import CSQLite
import Foundation

/// Tells SQLite to copy bound bytes before the bind call returns (`SQLITE_TRANSIENT`).
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A failed SQLite call: the extended result code and SQLite's own message.
///
/// SQLite's messages name tables, columns and constraints, never bound values, so they carry no key material.
struct SQLiteFailure: Error, Sendable {
    /// The extended result code (`sqlite3_extended_errcode`).
    var code: Int32
    /// SQLite's explanation (`sqlite3_errmsg`) or ours.
    var message: String

    /// The primary result code: the low byte of the extended code.
    var primaryCode: Int32 { code & 0xFF }
}

/// A value to bind to a statement parameter, or one read from a column.
enum SQLiteValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}

/// One SQLite database handle with a cache of prepared statements.
///
/// Not thread-safe: the owner serializes every call (the store holds it inside a `Mutex`).
final class SQLiteConnection {
    private var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]
    /// The WAL index SQLite maps for this connection, once `startWatchingForChanges()` has found it.
    private var walIndex: UnsafeRawPointer?

    /// Opens the database at `path` with the `SQLITE_OPEN_*` flags given; never creates it unless asked to.
    init(path: String, flags: Int32) throws(SQLiteFailure) {
        var db: OpaquePointer?
        let result = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard result == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
            let code = db.map { sqlite3_extended_errcode($0) } ?? result
            sqlite3_close_v2(db)
            throw SQLiteFailure(code: code, message: message)
        }
        sqlite3_extended_result_codes(db, 1)
        handle = db
    }

    deinit {
        close()
    }

    /// Whether `close()` has run.
    var isClosed: Bool { handle == nil }

    /// Whether no transaction is open (SQLite's autocommit mode).
    var isAutocommit: Bool {
        guard let handle else { return true }
        return sqlite3_get_autocommit(handle) != 0
    }

    /// Finalizes every cached statement and closes the handle. Idempotent.
    func close() {
        walIndex = nil
        for statement in statements.values {
            statement.finalize()
        }
        statements.removeAll()
        if let handle {
            sqlite3_close_v2(handle)
        }
        handle = nil
    }

    /// Waits up to `milliseconds` for another connection's lock before failing with `SQLITE_BUSY`.
    func setBusyTimeout(milliseconds: Int32) {
        guard let handle else { return }
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Whether closing this connection (the last one to the file) may checkpoint the WAL into the main database
    /// file. `open` turns it off until every check has passed, so a failed open leaves the main file as it was.
    func setCheckpointOnClose(_ enabled: Bool) throws(SQLiteFailure) {
        let handle = try openHandle()
        guard passkey_sqlite3_checkpoint_on_close(handle, enabled ? 1 : 0) == SQLITE_OK else { throw failure() }
    }

    /// Whether SQLite opened the main database read-only (`sqlite3_db_readonly`), whatever was asked.
    var isReadOnly: Bool {
        guard let handle else { return true }
        return sqlite3_db_readonly(handle, "main") == 1
    }

    /// Lets `databaseVersion` answer: finds the WAL index SQLite maps for this connection. Does nothing unless the
    /// database is in WAL mode and its index has the layout SQLite documents; `databaseVersion` then stays nil.
    func startWatchingForChanges() throws(SQLiteFailure) {
        let handle = try openHandle()
        // A read first (the header's user_version), so SQLite has opened the WAL and mapped its index.
        _ = try integer("PRAGMA user_version")
        guard try textColumn("PRAGMA journal_mode") == ["wal"] else { return }
        guard let region = passkey_sqlite3_wal_index(handle) else { return }
        walIndex = region
        // A header another process is rewriting at this moment reads as nil too: that passes within microseconds,
        // while one with another layout stays nil, and is then not watched.
        for _ in 0..<1000 {
            if databaseVersion != nil { return }
        }
        walIndex = nil
    }

    /// A value that changes whenever any connection, in this process or another, commits to the database, and
    /// otherwise stays the same: the header of the WAL index, which SQLite itself compares to decide whether its page
    /// cache still holds (https://sqlite.org/walformat.html). Costs a few loads; no lock and no system call. Nil when
    /// `startWatchingForChanges()` found nothing to watch, or while a writer is halfway through updating the header.
    var databaseVersion: DatabaseVersion? {
        guard let walIndex else { return nil }
        var version = DatabaseVersion()
        let consistent = withUnsafeMutableBytes(of: &version.header) { buffer in
            passkey_wal_index_header(walIndex, buffer.baseAddress!.assumingMemoryBound(to: UInt64.self))
        }
        return consistent == 1 ? version : nil
    }

    /// Runs one or more statements that return no rows of interest.
    func execute(_ sql: String) throws(SQLiteFailure) {
        let handle = try openHandle()
        var errorMessage: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        defer { sqlite3_free(errorMessage) }
        guard result == SQLITE_OK else {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            throw SQLiteFailure(code: sqlite3_extended_errcode(handle), message: message)
        }
    }

    /// Runs a query and returns the first column of every row as text; for pragmas such as `quick_check`.
    func textColumn(_ sql: String) throws(SQLiteFailure) -> [String?] {
        try prepared(sql).query([]) { $0.text(0) }
    }

    /// Runs a query and returns the first column of the first row as an integer.
    func integer(_ sql: String) throws(SQLiteFailure) -> Int64? {
        try prepared(sql).query([]) { $0.integer(0) }.first ?? nil
    }

    /// The statement for `sql`, prepared once and then reused.
    func prepared(_ sql: String) throws(SQLiteFailure) -> SQLiteStatement {
        if let statement = statements[sql] {
            return statement
        }
        let handle = try openHandle()
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw failure()
        }
        let wrapped = SQLiteStatement(handle: statement, connection: handle)
        statements[sql] = wrapped
        return wrapped
    }

    /// The current error of this handle as a `SQLiteFailure`.
    func failure() -> SQLiteFailure {
        guard let handle else { return SQLiteFailure(code: SQLITE_MISUSE, message: "the database is closed") }
        return SQLiteFailure(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }

    private func openHandle() throws(SQLiteFailure) -> OpaquePointer {
        guard let handle else { throw SQLiteFailure(code: SQLITE_MISUSE, message: "the database is closed") }
        return handle
    }
}

/// The state of the database as of one WAL-index header (see `SQLiteConnection.databaseVersion`): equal versions mean no
/// commit and no WAL restart happened in between.
struct DatabaseVersion: Equatable, Sendable {
    /// The header's 48 bytes as SQLite stores them: version, change counter, page size, last valid frame, page count,
    /// checksums and salts.
    fileprivate var header: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

    static func == (lhs: DatabaseVersion, rhs: DatabaseVersion) -> Bool {
        lhs.header == rhs.header
    }
}

/// A prepared statement owned by a `SQLiteConnection`.
final class SQLiteStatement {
    private var handle: OpaquePointer?
    private let connection: OpaquePointer

    fileprivate init(handle: OpaquePointer, connection: OpaquePointer) {
        self.handle = handle
        self.connection = connection
    }

    fileprivate func finalize() {
        sqlite3_finalize(handle)
        handle = nil
    }

    /// Binds `values`, steps to completion and maps every row with `read`. Leaves the statement reset.
    func query<Row>(_ values: [SQLiteValue], _ read: (SQLiteRow) -> Row) throws(SQLiteFailure) -> [Row] {
        guard let handle else { throw SQLiteFailure(code: SQLITE_MISUSE, message: "the statement is finalized") }
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        try bind(values, to: handle)
        var rows: [Row] = []
        while true {
            let result = sqlite3_step(handle)
            switch result {
            case SQLITE_ROW:
                rows.append(read(SQLiteRow(handle: handle)))
            case SQLITE_DONE:
                return rows
            default:
                throw SQLiteFailure(
                    code: sqlite3_extended_errcode(connection),
                    message: String(cString: sqlite3_errmsg(connection))
                )
            }
        }
    }

    /// Binds `values` and steps to completion, ignoring any rows; returns the number of rows changed.
    @discardableResult
    func run(_ values: [SQLiteValue]) throws(SQLiteFailure) -> Int {
        _ = try query(values) { _ in () }
        return Int(sqlite3_changes(connection))
    }

    private func bind(_ values: [SQLiteValue], to handle: OpaquePointer) throws(SQLiteFailure) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .null:
                result = sqlite3_bind_null(handle, index)
            case .integer(let integer):
                result = sqlite3_bind_int64(handle, index, integer)
            case .text(var text):
                result = text.withUTF8 { utf8 in
                    // An empty buffer may have no address, and a NULL pointer would bind SQL NULL.
                    guard let base = utf8.baseAddress, !utf8.isEmpty else {
                        return sqlite3_bind_text(handle, index, "", 0, sqliteTransient)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                        sqlite3_bind_text(handle, index, $0, Int32(utf8.count), sqliteTransient)
                    }
                }
            case .blob(let bytes):
                result = bytes.withUnsafeBytes { raw in
                    // As above: an empty blob must stay a blob, not become NULL.
                    guard let base = raw.baseAddress, !raw.isEmpty else {
                        return sqlite3_bind_zeroblob(handle, index, 0)
                    }
                    return sqlite3_bind_blob(handle, index, base, Int32(raw.count), sqliteTransient)
                }
            }
            guard result == SQLITE_OK else {
                throw SQLiteFailure(code: result, message: String(cString: sqlite3_errmsg(connection)))
            }
        }
    }
}

/// The current row of a stepping statement; valid only inside the `query` callback.
struct SQLiteRow {
    fileprivate let handle: OpaquePointer

    /// The column as stored: NULL, an integer, text or a blob; a floating-point value reads as NULL (no table of the
    /// store has one).
    func value(_ column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: .integer(sqlite3_column_int64(handle, column))
        case SQLITE_TEXT: .text(text(column) ?? "")
        case SQLITE_BLOB: .blob(blob(column) ?? [])
        default: .null
        }
    }

    /// Appends the column in `RowAuthentication.encode`'s encoding, straight from SQLite's buffers (the hot path:
    /// no intermediate strings or arrays). Text is taken as stored; `value(_:)` repairs invalid UTF-8, so for such
    /// text the two encodings differ, which only costs a cache miss.
    func appendEncoded(_ column: Int32, to bytes: inout [UInt8]) {
        func appendLength(_ count: Int32) {
            let count = UInt32(count)
            bytes.append(contentsOf: [
                UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF),
            ])
        }
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER:
            let value = UInt64(bitPattern: sqlite3_column_int64(handle, column))
            bytes.append(1)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            }
        case SQLITE_TEXT:
            bytes.append(2)
            let pointer = sqlite3_column_text(handle, column)
            let count = sqlite3_column_bytes(handle, column)
            appendLength(count)
            if let pointer { bytes.append(contentsOf: UnsafeBufferPointer(start: pointer, count: Int(count))) }
        case SQLITE_BLOB:
            bytes.append(3)
            let pointer = sqlite3_column_blob(handle, column)
            let count = sqlite3_column_bytes(handle, column)
            appendLength(count)
            if let pointer { bytes.append(contentsOf: UnsafeRawBufferPointer(start: pointer, count: Int(count))) }
        default:
            bytes.append(0)
        }
    }

    /// Whether the column is a blob holding exactly `bytes`, compared in place.
    func blobEquals(_ column: Int32, _ bytes: [UInt8]) -> Bool {
        guard sqlite3_column_type(handle, column) == SQLITE_BLOB else { return false }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count == bytes.count else { return false }
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return count == 0 }
        return bytes.withUnsafeBytes { memcmp($0.baseAddress!, pointer, count) == 0 }
    }

    /// Whether the column holds SQL NULL.
    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    /// The column as an integer, or nil unless it is stored as one.
    func integer(_ column: Int32) -> Int64? {
        guard sqlite3_column_type(handle, column) == SQLITE_INTEGER else { return nil }
        return sqlite3_column_int64(handle, column)
    }

    /// The column as text, or nil unless it is stored as text. Invalid UTF-8 is repaired, embedded NULs kept.
    func text(_ column: Int32) -> String? {
        guard sqlite3_column_type(handle, column) == SQLITE_TEXT else { return nil }
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The column as bytes, or nil unless it is stored as a blob.
    func blob(_ column: Int32) -> [UInt8]? {
        guard sqlite3_column_type(handle, column) == SQLITE_BLOB else { return nil }
        guard let pointer = sqlite3_column_blob(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
