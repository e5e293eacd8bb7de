import AssociatedDomains
import Foundation
import PasskeyStoreIO

/// The approval table as `domains.json` beside the passkey store: JSON, mode 0600, replaced atomically.
public struct ApprovalTableFile: Sendable {
    /// The largest table read: 8 MiB (each domain's file is at most 128 KB).
    public static let maximumSize = 8 << 20

    public let path: String

    public init(path: String) { self.path = path }

    /// `domains.json` beside the store at `storeURL`.
    public static func beside(storeURL: URL) -> ApprovalTableFile {
        ApprovalTableFile(path: storeURL.deletingLastPathComponent().appendingPathComponent("domains.json").path)
    }

    /// The table; empty when there is no file yet.
    public func load() throws -> ApprovalTable {
        guard let bytes = try OwnerOnlyFile.read(path, limit: Self.maximumSize) else { return ApprovalTable() }
        return try ApprovalTable(json: bytes)
    }

    /// Replaces the file with `table`, creating its directory (0700) when needed.
    public func save(_ table: ApprovalTable) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        try OwnerOnlyFile.replace(path, with: table.json())
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
