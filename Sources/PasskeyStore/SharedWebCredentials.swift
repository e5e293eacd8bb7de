import Basics
import Foundation

/// Which domains approved which apps for an associated-domains service (`webcredentials`, `applinks`, …): the
/// platform's approval table, read only. `passkey domains check` writes it (`DomainApprovalsFile`); tests use
/// `InMemoryDomainApprovals`.
public protocol DomainApprovals: Sendable {
    /// The domains (`example.com`, or `example.com:8443` for a port) whose association file approved `app`
    /// (`TEAMID.bundle.id`) for `service`, as of their last check. Denied and pending entries are not approved.
    func approvedDomains(app: String, service: String) -> [String]
}

/// Approvals held in memory: `approved[app][service]` lists the domains.
public struct InMemoryDomainApprovals: DomainApprovals {
    public var approved: [String: [String: [String]]]

    public init(_ approved: [String: [String: [String]]] = [:]) {
        self.approved = approved
    }

    public func approvedDomains(app: String, service: String) -> [String] {
        approved[app]?[service] ?? []
    }
}

/// The approval table as a JSON file beside the store (`passkeys.sqlite` → `passkeys.domains.json`), read strictly
/// once when loaded. The format (Docs/Passwords.md, "Shared web credentials"):
///
/// ```json
/// { "format": "passkey-domain-approvals", "version": 1,
///   "approvals": [ { "service": "webcredentials", "domain": "example.com", "app": "ABCDE12345.com.example.app",
///                    "state": "approved", "checked": 1764000000000, "reason": "…" } ] }
/// ```
///
/// `service`, `domain`, `app` and `state` (`approved`, `denied` or `pending`) are required strings; `checked`
/// (milliseconds since 1970) and `reason` are optional; unknown fields are ignored. Only `approved` entries approve.
/// A missing file approves nothing; a file that is not exactly this is refused with `DomainApprovalsError`.
public struct DomainApprovalsFile: DomainApprovals {
    public static let formatName = "passkey-domain-approvals"
    public static let currentVersion = 1
    /// The largest file read.
    public static let maximumFileSize = 4 << 20

    public struct Entry: Hashable, Sendable {
        public var service: String
        public var domain: String
        public var app: String
        public var state: String
    }

    public let url: URL
    public let entries: [Entry]

    /// Where the table of the store at `store` is: beside it, named after it.
    public static func url(forStore store: URL) -> URL {
        let file = store.standardizedFileURL
        let base = file.deletingPathExtension().lastPathComponent
        return file.deletingLastPathComponent().appendingPathComponent(
            (base.isEmpty ? file.lastPathComponent : base) + ".domains.json")
    }

    /// Reads the file at `url`; a missing file is an empty table.
    public init(contentsOf url: URL) throws(DomainApprovalsError) {
        self.url = url
        switch IndexFiles.contents(of: url.path, limit: Self.maximumFileSize) {
        case .missing: entries = []
        case .failed(let reason): throw DomainApprovalsError(path: url.path, reason: reason)
        case .bytes(let bytes): entries = try Self.decode(bytes, path: url.path)
        }
    }

    public func approvedDomains(app: String, service: String) -> [String] {
        var seen: Set<String> = []
        return entries.filter { $0.app == app && $0.service == service && $0.state == "approved" }
            .map { $0.domain.lowercased() }.filter { seen.insert($0).inserted }
    }

    private struct Document: Decodable {
        struct Approval: Decodable {
            var service: String
            var domain: String
            var app: String
            var state: String
            var checked: Int64?
            var reason: String?
        }
        var format: String
        var version: Int
        var approvals: [Approval]
    }

    /// The entries of a file's bytes, checked.
    public static func decode(_ bytes: [UInt8], path: String) throws(DomainApprovalsError) -> [Entry] {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(bytes))
        } catch {
            throw DomainApprovalsError(path: path, reason: "it is not a domain approval table")
        }
        guard document.format == formatName else {
            throw DomainApprovalsError(path: path, reason: "it is not a domain approval table")
        }
        guard document.version == currentVersion else {
            throw DomainApprovalsError(path: path, reason: "its format version \(document.version) is unknown")
        }
        return try document.approvals.enumerated().map { (position, approval) throws(DomainApprovalsError) in
            guard ["approved", "denied", "pending"].contains(approval.state), !approval.service.isEmpty,
                !approval.app.isEmpty, approval.app.utf8.count <= 255, SharedWebCredentials.isDomain(approval.domain)
            else {
                throw DomainApprovalsError(path: path, reason: "approval \(position + 1) is not valid")
            }
            return Entry(service: approval.service, domain: approval.domain, app: approval.app, state: approval.state)
        }
    }
}

/// The approval table could not be read. Never silently treated as "not approved".
public struct DomainApprovalsError: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public var description: String { "the domain approval table \(path) is damaged (\(reason))" }
}

/// The rules of `SecRequestSharedWebCredential` and `SecAddSharedWebCredential`: an app sees and saves the logins of
/// the domains that approved it for `webcredentials`, and nothing tells it whether a domain it may not use has any.
public enum SharedWebCredentials {
    /// The associated-domains service these rules need.
    public static let service = "webcredentials"

    /// The logins `app` may be offered: those of `domain` when it approved the app, else of every domain that did
    /// (`domain` nil). A domain that did not approve the app and one that approved it but has no login give the same
    /// empty answer. A login matches a domain when its service is that domain, or an `https://` origin on that host
    /// and port (`example.com:8443` for `https://example.com:8443`). In listing order.
    public static func offered(
        to app: String, domain: String?, approvals: any DomainApprovals, logins: [SavedLogin]
    ) -> [SavedLogin] {
        let approved = Set(approvals.approvedDomains(app: app, service: service).map { $0.lowercased() })
        let wanted: Set<String>
        if let domain {
            let requested = domain.lowercased()
            guard approved.contains(requested) else { return [] }
            wanted = [requested]
        } else {
            wanted = approved
        }
        return logins.filter { login in login.service.hostAndPort.map(wanted.contains) ?? false }
            .sorted(by: SavedLogin.listedBefore)
    }

    /// Whether `domain` (`host` or `host:port`) approved `app` for `webcredentials`.
    public static func isApproved(app: String, domain: String, approvals: any DomainApprovals) -> Bool {
        approvals.approvedDomains(app: app, service: service).contains { $0.lowercased() == domain.lowercased() }
    }

    /// What adding (or, with no password, deleting) a login from an app does.
    public enum AddDecision: Hashable, Sendable {
        /// The domain did not approve the app: refused, nothing changes.
        case notApproved
        /// A new login: saved without asking.
        case saveSilently
        /// The login has this very password already: nothing to do.
        case unchanged
        /// The login has another password: the user is asked before it is replaced.
        case askToChange
        /// Deleting a login: the user is asked first.
        case askToDelete
        /// Deleting a login that is not there.
        case nothingToDelete
    }

    /// `SecAddSharedWebCredential`: `app` saves `password` (nil: deletes the login) for `domain`, where `existing`
    /// is the login already saved for that domain and user, if any. The existing password is compared in constant
    /// time.
    public static func decideAdd(
        app: String, domain: String, approvals: any DomainApprovals, existing: PasswordCredential?, password: String?
    ) -> AddDecision {
        guard isApproved(app: app, domain: domain, approvals: approvals) else { return .notApproved }
        guard let password else { return existing == nil ? .nothingToDelete : .askToDelete }
        guard let existing else { return .saveSilently }
        return existing.hasPassword(password) ? .unchanged : .askToChange
    }

    /// `host` or `host:port` with a host that is a domain name.
    public static func isDomain(_ text: String) -> Bool {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let host = parts.first, PasswordService.isDomain(String(host).lowercased()) else { return false }
        guard parts.count == 2 else { return true }
        guard let port = Int(parts[1]), (1...65535).contains(port), String(port) == parts[1] else { return false }
        return true
    }
}
