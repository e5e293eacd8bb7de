import Basics
import Foundation

/// KeePassXC's CSV export (Database → Export → CSV File), the one KeePassXC file that holds passwords and one-time
/// codes: a header row `"Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"`
/// (`src/format/CsvExporter.cpp`), then one row per entry, every field quoted, `"` doubled inside (RFC 4180).
///
/// Each row with a password is a saved password for its `URL`, with its `Notes` as the note; its `TOTP` (an
/// `otpauth://totp/` URI, or a bare base32 secret) a one-time code for the same login. Columns are found by their
/// header names, so older exports without `TOTP` or the dates read too. A row with neither a password nor a code is
/// named as skipped, and so is a code that cannot be read (never quoting it).
public enum KeePassXCCSV {
    public static let source = "KeePassXC CSV export"

    /// The columns a KeePassXC export starts with.
    static let leadingColumns = ["Group", "Title", "Username", "Password", "URL"]

    /// Whether `bytes` start with KeePassXC's header row (a UTF-8 byte order mark allowed before it).
    static func matches(_ bytes: [UInt8]) -> Bool {
        var text = bytes.prefix(256)
        if text.starts(with: [0xEF, 0xBB, 0xBF]) { text = text.dropFirst(3) }
        let quoted = Array(leadingColumns.map { "\"\($0)\"" }.joined(separator: ",").utf8)
        let bare = Array(leadingColumns.joined(separator: ",").utf8)
        return text.starts(with: quoted) || text.starts(with: bare)
    }

    /// Reads the passwords and codes of an export; `now` dates rows without a `Created` date.
    public static func read(_ bytes: [UInt8], now: Date) throws(ExchangeError) -> ImportContents {
        guard bytes.count <= ExchangeJSON.maximumBytes else {
            throw ExchangeError(
                .tooLarge, "the file is \(bytes.count) bytes, above the limit of \(ExchangeJSON.maximumBytes >> 20) MiB"
            )
        }
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        guard let text = String(validating: body, as: UTF8.self) else {
            throw ExchangeError(.malformedCSV, "the CSV file is not UTF-8 text")
        }
        let rows = try Self.rows(text)
        guard let header = rows.first else { throw ExchangeError(.malformedCSV, "the CSV file is empty") }
        func column(_ name: String) -> Int? { header.firstIndex(of: name) }
        guard let title = column("Title"), let user = column("Username"), let password = column("Password"),
            let url = column("URL")
        else {
            throw ExchangeError(.malformedCSV, "the CSV header lacks Title, Username, Password or URL")
        }
        let notes = column("Notes")
        let totp = column("TOTP")
        let created = column("Created")
        var contents = ImportContents(source: source, passkeys: [], wasClearText: true)
        for (number, row) in rows.enumerated().dropFirst() {
            guard row.count == header.count else {
                throw ExchangeError(
                    .malformedCSV,
                    "row \(number + 1) has \(row.count.counted("field")), not the header's \(header.count)")
            }
            let name = row[title].isEmpty ? "row \(number + 1)" : row[title]
            let note = notes.map { row[$0] }.flatMap { $0.isEmpty ? nil : $0 }
            let noteFits = (note?.utf8.count ?? 0) <= CXF.Header.maximumNoteLength
            let date = created.flatMap { Self.date(row[$0]) } ?? now
            let urls = row[url].isEmpty ? [] : [row[url]]
            var carried = false
            var noteKept = false
            if !row[password].isEmpty {
                contents.passwords.append(
                    ImportedPassword(
                        urls: urls, userName: row[user], password: row[password], note: noteFits ? note : nil,
                        creationDate: date, title: name))
                carried = true
                noteKept = true
            }
            if let totp, !row[totp].isEmpty {
                do throws(OTPAuthURI.Problem) {
                    let code = try OTPAuthURI(uriOrSecret: row[totp])
                    contents.oneTimeCodes.append(
                        ImportedOneTimeCode(
                            urls: urls, userName: row[user].isEmpty ? code.accountName : row[user],
                            issuer: code.issuer, secret: code.secret, parameters: code.parameters, creationDate: date,
                            title: name))
                    carried = true
                } catch {
                    contents.skipped.append(SkippedCredential(type: "totp", title: name, reason: error.message))
                }
            }
            if !carried {
                contents.skipped.append(SkippedCredential(type: "entry", title: name, reason: "it has no password"))
            }
            if note != nil, !noteKept || !noteFits {
                contents.skipped.append(
                    SkippedCredential(
                        type: "note", title: name,
                        reason: noteFits
                            ? "a note is kept only with a password of its entry"
                            : "it is longer than \(CXF.Header.maximumNoteLength) bytes"))
            }
        }
        return contents
    }

    /// RFC 4180 rows: fields separated by commas, rows by CRLF or LF, a field in double quotes may hold commas,
    /// line breaks and doubled quotes. An unterminated quote is an error; empty lines are skipped.
    static func rows(_ text: String) throws(ExchangeError) -> [[String]] {
        let scalars = Array(text.unicodeScalars)
        var rows: [[String]] = []
        var row: [String] = []
        var field = String.UnicodeScalarView()
        var quoted = false
        var fieldStarted = false
        var index = 0
        func endRow() {
            if !(row.isEmpty && field.isEmpty && !fieldStarted) {
                row.append(String(field))
                rows.append(row)
            }
            row = []
            field = String.UnicodeScalarView()
            fieldStarted = false
        }
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            if quoted {
                if scalar == "\"" {
                    if index < scalars.count, scalars[index] == "\"" {
                        field.append("\"")
                        index += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"" where field.isEmpty:
                quoted = true
                fieldStarted = true
            case ",":
                row.append(String(field))
                field = String.UnicodeScalarView()
                fieldStarted = true
            case "\r":
                if index < scalars.count, scalars[index] == "\n" { index += 1 }
                endRow()
            case "\n":
                endRow()
            default:
                field.append(scalar)
                fieldStarted = true
            }
        }
        guard !quoted else { throw ExchangeError(.malformedCSV, "the CSV file ends inside a quoted field") }
        endRow()
        return rows
    }

    /// `Created` as KeePassXC writes it (ISO 8601, `2024-03-05T10:11:12Z`); nil for anything else.
    static func date(_ text: String) -> Date? {
        guard !text.isEmpty else { return nil }
        return ISO8601DateFormatter().date(from: text)
    }
}
