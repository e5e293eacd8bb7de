import Basics
import Foundation
import PublicSuffix

/// Why an entitlement, a domain or the approval table was refused.
public struct ApprovalTableError: CodedError {
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// Not `service:domain[:port]`, or the domain or port is not valid.
        case invalidEntitlement
        /// The table's file is not what this program writes, or cannot be read.
        case malformedTable
        /// The table holds ``ApprovalTable/maximumEntries`` entries, and the check was of a new pair.
        case full
    }

    public var code: Code
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// One line of an app's `com.apple.developer.associated-domains` entitlement: `webcredentials:example.com`,
/// `applinks:example.com:8443`. The host is lower case; the port is nil for 443.
public struct Entitlement: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var service: AssociatedService
    public var host: String
    public var port: Int?

    public init(service: AssociatedService, domain: String) throws(ApprovalTableError) {
        self.service = service
        (host, port) = try Self.domain(domain)
    }

    /// Reads `service:domain[:port]`.
    public init(_ text: String) throws(ApprovalTableError) {
        guard let colon = text.firstIndex(of: ":"), let service = AssociatedService(rawValue: String(text[..<colon]))
        else {
            throw ApprovalTableError(
                .invalidEntitlement,
                "\"\(text)\" is not service:domain (services: "
                    + AssociatedService.allCases.map(\.rawValue).joined(separator: ", ") + ")")
        }
        try self.init(service: service, domain: String(text[text.index(after: colon)...]))
    }

    /// `host` or `host:port`.
    public var domain: String { port.map { "\(host):\($0)" } ?? host }
    /// The port to connect to.
    public var effectivePort: Int { port ?? 443 }
    public var description: String { "\(service):\(domain)" }

    public static func < (lhs: Entitlement, rhs: Entitlement) -> Bool { lhs.description < rhs.description }

    /// Reads `DOMAIN[:PORT]`: a valid domain name (lowered) and a port from 1 to 65535; `:443` is no port.
    public static func domain(_ text: String) throws(ApprovalTableError) -> (host: String, port: Int?) {
        var host = Substring(text)
        var port: Int?
        if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            let digits = text[text.index(after: colon)...]
            guard !digits.isEmpty, digits.count <= 5,
                digits.allSatisfy({ ("0"..."9").contains($0) }), let number = Int(digits), (1...65535).contains(number)
            else {
                throw ApprovalTableError(.invalidEntitlement, "\"\(text)\" has no valid port after the colon")
            }
            port = number == 443 ? nil : number
        }
        do {
            return (try DomainName(host).text, port)
        } catch {
            throw ApprovalTableError(.invalidEntitlement, "\"\(host)\" is not a valid domain: \(error)")
        }
    }
}

/// The platform's table of associated domains: for each entitlement and app (many to many) the last check's state,
/// with its time and reason; and, per domain, the last file fetched from it, for `passkey domains match`.
///
/// A value; `ApprovalTableFile` (AssociatedDomainsIO) keeps it as JSON beside the passkey store.
///
/// It is bounded by what it holds, so that its file always fits the reader's limit (issue 23, attack 5: 48 domains
/// serving 128 KiB files once made a table its own reader refused, and every command that reads it failed): at most
/// ``maximumEntries`` entries, each with its reason, URL and signer cut to ``Entry/maximumTextLength`` characters,
/// and the files of at most ``maximumFiles`` domains, those checked most recently. A domain whose file was let go
/// keeps its entries; `domains match` then asks for a new check.
public struct ApprovalTable: Hashable, Sendable {
    /// The most entries kept: a check of a new entitlement and app beyond it is refused with ``ApprovalTableError/Code/full``.
    public static let maximumEntries = 1024
    /// The most domains whose last file is kept (each at most 128 KiB, 171 KiB in base64).
    public static let maximumFiles = 32

    public struct Entry: Hashable, Sendable, Codable {
        public var entitlement: String
        public var app: String
        public var state: ApprovalState
        public var reason: String
        public var checked: Date
        public var url: String
        public var status: Int?
        public var signer: String?

        /// The domain of the entitlement, or nil when the entitlement does not parse.
        public var domain: String? { (try? Entitlement(entitlement))?.domain }

        public init(
            entitlement: Entitlement, app: AppID, verdict: CheckVerdict, checked: Date
        ) {
            self.entitlement = entitlement.description
            self.app = app.description
            self.state = verdict.state
            self.reason = Self.bounded(verdict.reason, Self.maximumTextLength)
            self.checked = checked
            self.url = Self.bounded(verdict.url, Self.maximumTextLength)
            self.status = verdict.status
            self.signer = verdict.signer.map { Self.bounded($0, Self.maximumTextLength) }
        }

        /// The longest reason, URL or signer kept, in characters: a reason may quote names from the site's file, and
        /// an entry must stay small for the table's bound to hold.
        public static let maximumTextLength = 512

        /// `text`, cut to `limit` characters with `…` at the end when longer.
        static func bounded(_ text: String, _ limit: Int) -> String {
            text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
        }
    }

    /// Every entry, ordered by entitlement, then app.
    public private(set) var entries: [Entry]
    /// The last file fetched from each domain (`host[:port]`).
    public private(set) var files: [String: [UInt8]]

    public init() {
        entries = []
        files = [:]
    }

    /// The entry for `entitlement` and `app`, if it was ever checked.
    public func entry(_ entitlement: Entitlement, app: AppID) -> Entry? {
        entries.first { $0.entitlement == entitlement.description && $0.app == app.description }
    }

    /// The last file fetched from `domain` (`host[:port]`), nil when the last check found none.
    public func lastFile(domain: String) -> [UInt8]? { files[domain] }

    /// The domain whose last file decides a link for `domains match`: `domain` as given (`host[:port]`), else the
    /// link's host and port, in lower case and without `:443`, as `lastFile(domain:)` keys them; nil when no domain
    /// is given and the link is not a URL with a host.
    public static func fileDomain(given domain: String?, link: String) -> String? {
        if let domain {
            let lowered = domain.lowercased()
            return lowered.hasSuffix(":443") ? String(lowered.dropLast(4)) : lowered
        }
        guard let components = URLComponents(string: link), let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        return components.port.map { $0 == 443 ? host : "\(host):\($0)" } ?? host
    }

    /// How long an approval stands through checks that could not reach the site (pending: no answer, a 5xx): a week
    /// after the check that approved it. A site down for an afternoon, or a laptop offline, must not undo an
    /// approval (issue 24: a closed port or an untrusted certificate replaced `approved` with `pending`); Apple's
    /// daemon too keeps the last good answer until it is due again. A denial always replaces it.
    public static let approvalStandsThroughPendingChecks: TimeInterval = 7 * 86_400

    /// What ``record(_:entitlement:app:at:)`` did with a verdict.
    public enum RecordOutcome: Hashable, Sendable {
        /// The verdict is the entry now.
        case recorded
        /// The check was pending and the approval of the check at this date stands; nothing changed.
        case approvalStands(since: Date)
    }

    /// Records a check's verdict. A file is kept for the domain; a denial without a file removes the one kept (the
    /// site no longer serves one), while a pending check keeps it (the platform goes on using what it had). A
    /// pending check leaves an approval younger than ``approvalStandsThroughPendingChecks`` as it is. Past
    /// ``maximumFiles`` domains, the file of the domain checked longest ago is let go. A new entitlement and app
    /// when the table holds ``maximumEntries`` is refused, and nothing changes.
    @discardableResult
    public mutating func record(
        _ verdict: CheckVerdict, entitlement: Entitlement, app: AppID, at time: Date
    ) throws(ApprovalTableError) -> RecordOutcome {
        if verdict.state == .pending, let standing = self.entry(entitlement, app: app), standing.state == .approved,
            time.timeIntervalSince(standing.checked) < Self.approvalStandsThroughPendingChecks
        {
            return .approvalStands(since: standing.checked)
        }
        let entry = Entry(entitlement: entitlement, app: app, verdict: verdict, checked: time)
        let known = entries.contains { $0.entitlement == entry.entitlement && $0.app == entry.app }
        guard known || entries.count < Self.maximumEntries else {
            throw ApprovalTableError(
                .full,
                "the approval table holds \(Self.maximumEntries) entries, the most it keeps; forget the apps that are "
                    + "no longer installed (passkey domains forget APP) and check again")
        }
        entries.removeAll { $0.entitlement == entry.entitlement && $0.app == entry.app }
        entries.append(entry)
        entries.sort { ($0.entitlement, $0.app) < ($1.entitlement, $1.app) }
        if let file = verdict.file {
            files[entitlement.domain] = file
        } else if verdict.state == .denied {
            files[entitlement.domain] = nil
        }
        while files.count > Self.maximumFiles, let stalest = stalestFileDomain(keeping: entitlement.domain) {
            files[stalest] = nil
        }
        return .recorded
    }

    /// The domain with a file whose latest check is the oldest (by domain name among equals), other than `kept`.
    private func stalestFileDomain(keeping kept: String) -> String? {
        var latest: [String: Date] = [:]
        for entry in entries {
            guard let domain = entry.domain, files[domain] != nil else { continue }
            latest[domain] = max(latest[domain] ?? entry.checked, entry.checked)
        }
        return files.keys.filter { $0 != kept }.min { lhs, rhs in
            let (left, right) = (latest[lhs] ?? .distantPast, latest[rhs] ?? .distantPast)
            return left != right ? left < right : lhs < rhs
        }
    }

    /// Forgets every entry for `app`, as uninstalling it does, and the files no other entry needs; returns the
    /// entries removed.
    @discardableResult
    public mutating func forget(app: AppID) -> [Entry] {
        let removed = entries.filter { $0.app == app.description }
        entries.removeAll { $0.app == app.description }
        let needed = Set(entries.compactMap(\.domain))
        files = files.filter { needed.contains($0.key) }
        return removed
    }
}

extension ApprovalTable {
    private struct Document: Codable {
        var version: Int
        var entries: [Entry]
        /// Domain → base64 of the file.
        var files: [String: String]
    }

    /// The JSON form (pretty, sorted keys, ISO 8601 times).
    public func json() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let document = Document(
            version: 1, entries: entries, files: files.mapValues { Data($0).base64EncodedString() })
        // Encoding strings, numbers and dates cannot fail.
        return Array((try? encoder.encode(document)) ?? Data("{}".utf8))
    }

    /// Reads the JSON form, checking every entry.
    public init(json: [UInt8]) throws(ApprovalTableError) {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let document: Document
        do {
            document = try decoder.decode(Document.self, from: Data(json))
        } catch {
            throw ApprovalTableError(.malformedTable, "the approval table is not valid JSON of its form: \(error)")
        }
        guard document.version == 1 else {
            throw ApprovalTableError(.malformedTable, "the approval table has version \(document.version), not 1")
        }
        guard document.entries.count <= Self.maximumEntries, document.files.count <= Self.maximumFiles else {
            throw ApprovalTableError(
                .malformedTable,
                "the approval table holds more than \(Self.maximumEntries) entries or \(Self.maximumFiles) files")
        }
        for entry in document.entries {
            guard (try? Entitlement(entry.entitlement)) != nil else {
                throw ApprovalTableError(.malformedTable, "the approval table has an invalid entitlement")
            }
            guard (try? AppID(entry.app)) != nil else {
                throw ApprovalTableError(.malformedTable, "the approval table has an invalid app ID")
            }
        }
        var files: [String: [UInt8]] = [:]
        for (domain, text) in document.files {
            guard let data = Data(base64Encoded: text) else {
                throw ApprovalTableError(.malformedTable, "the approval table's file for \(domain) is not base64")
            }
            files[domain] = Array(data)
        }
        self.entries = document.entries.sorted { ($0.entitlement, $0.app) < ($1.entitlement, $1.app) }
        self.files = files
    }
}
