import Basics
import CTAP2
import Foundation

/// Where a saved password is used: a domain (`example.com`), an `https://` origin (`https://example.com:8443`) or an
/// app ID (`ABCDE12345.com.example.app`: a 10-character team ID and a bundle ID), as Apple's
/// `ASCredentialServiceIdentifier` names a password's service.
///
/// Domains and origins are kept in lower case, an origin without a path, query or default port; an app ID is kept as
/// given. The team ID's upper-case letters and digits tell an app ID from a domain, which is stored in lower case.
public struct PasswordService: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        case domain
        case origin
        case app
    }

    public let kind: Kind
    /// The identifier as stored.
    public let text: String

    /// The longest identifier accepted.
    public static let maximumLength = 1024

    /// Parses a service identifier; nil when it is none of the three forms.
    public init?(_ raw: String) {
        guard !raw.isEmpty, raw.utf8.count <= Self.maximumLength,
            raw.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
        else { return nil }
        if raw.lowercased().hasPrefix("https://") {
            guard let origin = Self.origin(raw) else { return nil }
            (kind, text) = (.origin, origin)
        } else if Self.isAppID(raw) {
            (kind, text) = (.app, raw)
        } else if Self.isDomain(raw.lowercased()) {
            (kind, text) = (.domain, raw.lowercased())
        } else {
            return nil
        }
    }

    /// The host a domain or origin names (`https://example.com:8443` → `example.com`); nil for an app.
    public var host: String? {
        switch kind {
        case .domain: text
        case .origin: URLComponents(string: text)?.host
        case .app: nil
        }
    }

    /// `host`, with the origin's port when it has one: what a `webcredentials` approval names (`example.com:8443`).
    public var hostAndPort: String? {
        guard kind == .origin, let components = URLComponents(string: text), let host = components.host else {
            return host
        }
        return components.port.map { "\(host):\($0)" } ?? host
    }

    public var description: String { text }

    /// `TEAMID.bundle.id`: ten upper-case letters or digits, a dot, and a bundle ID of letters, digits, `-` and `.`.
    static func isAppID(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count > 11, utf8[10] == UInt8(ascii: "."),
            utf8[0..<10].allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }),
            utf8[0..<10].contains(where: { (0x41...0x5A).contains($0) })
        else { return false }
        let bundle = utf8[11...]
        return !bundle.isEmpty && bundle.first != UInt8(ascii: ".") && bundle.last != UInt8(ascii: ".")
            && bundle.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// A host name: dot-separated labels of letters, digits and `-`, none empty or longer than 63, not starting or
    /// ending with `-`; 253 characters at most.
    static func isDomain(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 253 else { return false }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            let bytes = Array(label.utf8)
            return (1...63).contains(bytes.count) && bytes.first != UInt8(ascii: "-")
                && bytes.last != UInt8(ascii: "-")
                && bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
        }
    }

    /// `https://host[:port]` in lower case, the default port dropped; nil for anything with a user, path (other
    /// than `/`), query or fragment.
    private static func origin(_ raw: String) -> String? {
        guard let components = URLComponents(string: raw), components.scheme?.lowercased() == "https",
            let host = components.host?.lowercased(), isDomain(host), components.user == nil,
            components.password == nil, components.query == nil, components.fragment == nil,
            components.path.isEmpty || components.path == "/"
        else { return nil }
        if let port = components.port {
            guard (1...65535).contains(port) else { return nil }
            return port == 443 ? "https://\(host)" : "https://\(host):\(port)"
        }
        return "https://\(host)"
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}

/// A saved login without its password: what listing shows and what choosers offer.
public struct SavedLogin: Hashable, Sendable {
    /// The row's own random identifier (16 bytes), which the identity index lists it by.
    public var id: [UInt8]
    public var service: PasswordService
    public var userName: String
    /// When it was saved first, and when its password last changed (milliseconds).
    public var creationDate: Date
    public var modificationDate: Date
    /// The use order: each use gives the login a rank above every other login of its service; higher is listed first.
    public var rank: Int
    /// When this program last gave the password to a page (`client get --password`); nil if never. An automatic
    /// passkey upgrade for the account is allowed only shortly after (`ConditionalCreate`).
    public var filledDate: Date?

    public init(
        id: [UInt8], service: PasswordService, userName: String, creationDate: Date, modificationDate: Date,
        rank: Int, filledDate: Date? = nil
    ) {
        self.id = id
        self.service = service
        self.userName = userName
        self.creationDate = Date(milliseconds: creationDate.milliseconds)
        self.modificationDate = Date(milliseconds: modificationDate.milliseconds)
        self.rank = rank
        self.filledDate = filledDate.map { Date(milliseconds: $0.milliseconds) }
    }

    /// Listing order: rank descending, then the latest change first, then by service and user name.
    public static func listedBefore(_ a: SavedLogin, _ b: SavedLogin) -> Bool {
        if a.rank != b.rank { return a.rank > b.rank }
        if a.modificationDate != b.modificationDate { return a.modificationDate > b.modificationDate }
        if a.service.text != b.service.text { return a.service.text < b.service.text }
        return a.userName < b.userName
    }
}

/// A saved login and its password, opened with the store key. The password never appears in `description` or in a
/// mirror (`dump`); read it from `password`, only where the user asked to see it.
public struct PasswordCredential: Sendable, CustomStringConvertible, CustomReflectable {
    public var login: SavedLogin
    public var password: String

    public init(login: SavedLogin, password: String) {
        self.login = login
        self.password = password
    }

    /// Whether `candidate` is this password, compared in constant time over the longer of the two.
    public func hasPassword(_ candidate: String) -> Bool {
        Self.sameSecret(password, candidate)
    }

    /// Whether two secrets (a password typed twice) are equal, in time that depends only on their lengths.
    public static func sameSecret(_ a: String, _ b: String) -> Bool {
        constantTimeEqual(Array(a.utf8), Array(b.utf8))
    }

    public var description: String { "password for \(login.userName) at \(login.service) (hidden)" }

    public var customMirror: Mirror {
        Mirror(self, children: ["login": login, "password": "(hidden)"], displayStyle: .struct)
    }
}

/// A saved password's or one-time code's row the store will not use: its sealed secret does not open with the row's
/// own columns (changed outside this program, moved from another row, or damaged), or a column is missing or out of
/// range. Read from the row without authentication: it only helps a person find and delete it.
public struct DamagedLogin: Hashable, Sendable, CustomStringConvertible {
    /// Which table the row is in.
    public enum Kind: Hashable, Sendable {
        case password, oneTimeCode
    }

    public var kind: Kind
    public var id: [UInt8]
    public var service: String?
    public var userName: String?
    public var reason: DamagedCredential.Reason

    public init(_ kind: Kind, id: [UInt8], service: String?, userName: String?, reason: DamagedCredential.Reason) {
        self.kind = kind
        self.id = id
        self.service = service
        self.userName = userName
        self.reason = reason
    }

    public var description: String {
        let what =
            switch reason {
            case .failsIntegrityCheck: "fails its integrity check: the store was damaged or tampered with"
            case .missingFields: "is missing required fields"
            }
        let row =
            switch kind {
            case .password: "saved password"
            case .oneTimeCode: "one-time code"
            }
        return "\(row) \(hexPrefix(id)) \(what)"
    }
}

/// One row of the passwords table.
public enum PasswordEntry: Sendable {
    case intact(PasswordCredential)
    case damaged(DamagedLogin)

    public var service: String? {
        switch self {
        case .intact(let credential): credential.login.service.text
        case .damaged(let damaged): damaged.service
        }
    }

    public var userName: String? {
        switch self {
        case .intact(let credential): credential.login.userName
        case .damaged(let damaged): damaged.userName
        }
    }
}

/// What saving a password did.
public enum PasswordSaveOutcome: Hashable, Sendable {
    /// No login for this service and user was saved: it is now.
    case added
    /// The login was there with another password, which is replaced.
    case changed
    /// The login was there with this very password: nothing was written.
    case unchanged
}
