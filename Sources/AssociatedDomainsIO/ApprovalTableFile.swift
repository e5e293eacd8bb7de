import AssociatedDomains
import Foundation
import PasskeyFilesIO
import PasskeyStoreIO

/// The approval table as a JSON file (`PasskeyFiles.domainApprovals`, `domains.json` beside the passkey store),
/// read and written through `OwnerOnlyFile`: mode 0600, replaced atomically.
public struct ApprovalTableFile: Sendable {
    /// The largest table read: 8 MiB. A table within its bounds (`ApprovalTable.maximumFiles` files of at most
    /// 128 KiB, 171 KiB in base64, and `ApprovalTable.maximumEntries` entries of well under 1 KiB) takes about
    /// 6.5 MiB, so the limit refuses only a file this program did not write.
    public static let maximumSize = 8 << 20

    /// The command that replaces an unreadable table with an empty one, named in the error.
    public static let repairCommand = "passkey domains forget --all"

    public let url: URL

    public init(url: URL) { self.url = url }

    /// The file's path, for messages.
    public var path: String { url.path }

    /// The table; empty when there is no file yet. A file that cannot be read or is not a table fails with one
    /// line that names the file, the reason and ``repairCommand``.
    public func load() throws(ApprovalTableError) -> ApprovalTable {
        do {
            guard let bytes = try OwnerOnlyFile.read(url, limit: Self.maximumSize) else { return ApprovalTable() }
            return try ApprovalTable(json: bytes)
        } catch let error as OwnerOnlyFileError {
            throw unreadable(error.reason)
        } catch let error as ApprovalTableError {
            throw unreadable(error.description)
        } catch {
            throw unreadable("\(error)")
        }
    }

    /// Replaces the file with `table`, creating its directory (0700) when needed.
    public func save(_ table: ApprovalTable) throws {
        try OwnerOnlyFile.write(table.json(), to: url)
    }

    /// Loads, changes and saves the table. When `change` throws, the file is left as it was.
    @discardableResult
    public func update<Result>(_ change: (inout ApprovalTable) throws -> Result) throws -> Result {
        var table = try load()
        let result = try change(&table)
        try save(table)
        return result
    }

    /// Replaces the table with an empty one without reading it: the repair for a file `load()` refuses.
    public func reset() throws {
        try save(ApprovalTable())
    }

    private func unreadable(_ reason: String) -> ApprovalTableError {
        ApprovalTableError(
            .malformedTable,
            "cannot use the approval table \(path): \(reason); \(Self.repairCommand) starts an empty one")
    }
}
