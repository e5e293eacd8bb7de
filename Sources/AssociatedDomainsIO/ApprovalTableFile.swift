import AssociatedDomains
import Foundation
import PasskeyFilesIO
import PasskeyStoreIO

/// The approval table as a JSON file (`PasskeyFiles.domainApprovals`, `domains.json` beside the passkey store),
/// read and written through `OwnerOnlyFile`: mode 0600, replaced atomically.
public struct ApprovalTableFile: Sendable {
    /// The largest table read: 8 MiB (each domain's file is at most 128 KB).
    public static let maximumSize = 8 << 20

    public let url: URL

    public init(url: URL) { self.url = url }

    /// The file's path, for messages.
    public var path: String { url.path }

    /// The table; empty when there is no file yet.
    public func load() throws -> ApprovalTable {
        guard let bytes = try OwnerOnlyFile.read(url, limit: Self.maximumSize) else { return ApprovalTable() }
        return try ApprovalTable(json: bytes)
    }

    /// Replaces the file with `table`, creating its directory (0700) when needed.
    public func save(_ table: ApprovalTable) throws {
        try OwnerOnlyFile.write(table.json(), to: url)
    }

    /// Loads, changes and saves the table.
    @discardableResult
    public func update<Result>(_ change: (inout ApprovalTable) throws -> Result) throws -> Result {
        var table = try load()
        let result = try change(&table)
        try save(table)
        return result
    }
}
