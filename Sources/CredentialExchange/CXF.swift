import Basics
import JSON

/// The FIDO Alliance Credential Exchange Format (CXF) 1.0, Proposed Standard of 2025-08-14: the JSON document one
/// credential provider writes and another reads (https://fidoalliance.org/specs/cx/cxf-v1.0-ps-20250814.html; the
/// review draft of 2025-03-13 that earlier versions followed writes the same members for what this program carries).
///
/// Only what this program needs is typed: the header, accounts, items and `passkey`, `basic-auth`, `totp` and `note`
/// credentials. Everything else is kept as JSON: credentials of other types (`ssh-key`, `credit-card`, …) as
/// `.other`, and collections, scopes and extensions as they were. Required members are required: a credential without `type` is an error,
/// an unknown `type` is not (`Docs/Exchange.md`).
public enum CXF {
    /// The version this program writes; it reads every 1.x.
    public static let version = Version(major: 1, minor: 0)

    /// `version`: the format's major and minor version.
    public struct Version: Hashable, Sendable, CustomStringConvertible {
        public var major: UInt64
        public var minor: UInt64

        public init(major: UInt64, minor: UInt64) {
            self.major = major
            self.minor = minor
        }

        public var description: String { "\(major).\(minor)" }
    }

    /// The document: who exported it and when, and the accounts.
    public struct Header: Sendable {
        public var version: Version
        /// The exporting provider, as a relying party ID (`passkey.local` for this program).
        public var exporterRpId: String
        public var exporterDisplayName: String
        /// When the export was made, in seconds since 1970.
        public var timestamp: UInt64
        public var accounts: [Account]

        public init(
            version: Version = CXF.version, exporterRpId: String, exporterDisplayName: String, timestamp: UInt64,
            accounts: [Account]
        ) {
            self.version = version
            self.exporterRpId = exporterRpId
            self.exporterDisplayName = exporterDisplayName
            self.timestamp = timestamp
            self.accounts = accounts
        }
    }

    /// One user's account at the exporting provider.
    public struct Account: Sendable {
        /// An opaque ID of at most 64 bytes.
        public var id: [UInt8]
        public var username: String
        public var email: String
        public var fullName: String?
        /// The account's collections, kept as they were (this program has no folders).
        public var collections: [JSONValue]
        public var items: [Item]
        public var extensions: [JSONValue]?

        public init(
            id: [UInt8], username: String, email: String, fullName: String? = nil, collections: [JSONValue] = [],
            items: [Item], extensions: [JSONValue]? = nil
        ) {
            self.id = id
            self.username = username
            self.email = email
            self.fullName = fullName
            self.collections = collections
            self.items = items
            self.extensions = extensions
        }
    }

    /// One item: a title and the credentials that belong together (a login's password, TOTP and passkey).
    public struct Item: Sendable {
        /// An opaque ID of at most 64 bytes.
        public var id: [UInt8]
        /// When the item was created, in seconds since 1970.
        public var creationAt: UInt64?
        public var modifiedAt: UInt64?
        public var title: String
        public var subtitle: String?
        public var favorite: Bool?
        /// Where the credentials may be offered (`urls`, `androidApps`), kept as it was.
        public var scope: JSONValue?
        public var credentials: [Credential]
        public var tags: [String]?
        public var extensions: [JSONValue]?

        public init(
            id: [UInt8], creationAt: UInt64? = nil, modifiedAt: UInt64? = nil, title: String, subtitle: String? = nil,
            favorite: Bool? = nil, scope: JSONValue? = nil, credentials: [Credential], tags: [String]? = nil,
            extensions: [JSONValue]? = nil
        ) {
            self.id = id
            self.creationAt = creationAt
            self.modifiedAt = modifiedAt
            self.title = title
            self.subtitle = subtitle
            self.favorite = favorite
            self.scope = scope
            self.credentials = credentials
            self.tags = tags
            self.extensions = extensions
        }
    }

    /// One credential of an item, by its `type`.
    public enum Credential: Sendable {
        /// `"type": "passkey"`.
        case passkey(Passkey)
        /// `"type": "note"`: a person's text about the item, `{"content": {"fieldType": "string", "value": …}}`.
        /// Carried with the passkeys of its item (`passkey note`).
        case note(String)
        /// `"type": "basic-auth"`: a user name and password, used where the item's `scope` says.
        case basicAuth(BasicAuth)
        /// `"type": "totp"`: a one-time-code secret and its parameters.
        case totp(TOTP)
        /// Any other type, kept whole (its `type` member included) so that it can be counted or passed on; also a
        /// known type whose members this program cannot use (a `totp` of an unknown algorithm, which the format
        /// says importers ignore).
        case other(type: String, JSONValue)

        public static let noteType = "note"

        /// The `type` member.
        public var type: String {
            switch self {
            case .passkey: Passkey.type
            case .note: Self.noteType
            case .basicAuth: BasicAuth.type
            case .totp: TOTP.type
            case .other(let type, _): type
            }
        }
    }

    /// A `basic-auth` credential: `username` (an editable field of type `string`) and `password` (of type
    /// `concealed-string`), both optional. `description` and `dump` never show the password.
    public struct BasicAuth: Sendable, CustomStringConvertible, CustomReflectable {
        public static let type = "basic-auth"

        public var username: String?
        public var password: String?

        public init(username: String?, password: String?) {
            self.username = username
            self.password = password
        }

        public var description: String { "CXF.BasicAuth(\((username ?? "").debugDescription), password hidden)" }

        public var customMirror: Mirror {
            Mirror(self, children: ["username": username as Any], displayStyle: .struct)
        }
    }

    /// A `totp` credential: `secret` (base32), `period`, `digits`, `algorithm` (`sha1`, `sha256`, `sha512`), and the
    /// optional `username` and `issuer`. `description` and `dump` never show the secret.
    public struct TOTP: Sendable, CustomStringConvertible, CustomReflectable {
        public static let type = "totp"

        public var secret: [UInt8]
        public var parameters: OneTimeCode.Parameters
        public var username: String?
        public var issuer: String?

        public init(secret: [UInt8], parameters: OneTimeCode.Parameters, username: String?, issuer: String?) {
            self.secret = secret
            self.parameters = parameters
            self.username = username
            self.issuer = issuer
        }

        public var description: String {
            "CXF.TOTP(\((issuer ?? "").debugDescription), \((username ?? "").debugDescription), secret hidden)"
        }

        public var customMirror: Mirror {
            Mirror(self, children: ["issuer": issuer as Any, "username": username as Any], displayStyle: .struct)
        }
    }

    /// A `passkey` credential: a WebAuthn credential with its private key.
    ///
    /// `description` and `dump` never show the key.
    public struct Passkey: Sendable, CustomStringConvertible, CustomReflectable {
        public static let type = "passkey"

        /// The credential ID as the relying party stores it.
        public var credentialID: [UInt8]
        public var rpID: String
        /// The account name (WebAuthn `user.name`).
        public var username: String
        /// WebAuthn `user.displayName`.
        public var userDisplayName: String
        /// WebAuthn `user.id`.
        public var userHandle: [UInt8]
        /// The private key, PKCS#8 DER (RFC 5958).
        public var key: [UInt8]
        public var fido2Extensions: FIDO2Extensions?

        public init(
            credentialID: [UInt8], rpID: String, username: String, userDisplayName: String, userHandle: [UInt8],
            key: [UInt8], fido2Extensions: FIDO2Extensions? = nil
        ) {
            self.credentialID = credentialID
            self.rpID = rpID
            self.username = username
            self.userDisplayName = userDisplayName
            self.userHandle = userHandle
            self.key = key
            self.fido2Extensions = fido2Extensions
        }

        public var description: String { "CXF.Passkey(\(rpID), \(username.debugDescription), key hidden)" }

        public var customMirror: Mirror {
            Mirror(self, children: ["rpID": rpID, "username": username], displayStyle: .struct)
        }
    }

    /// `fido2Extensions`: extension state that belongs to the credential.
    public struct FIDO2Extensions: Sendable {
        /// hmac-secret / PRF: the two CredRandoms.
        public var hmacCredentials: HMACCredentials?
        /// credBlob: the stored blob.
        public var credBlob: [UInt8]?
        /// largeBlob: the credential's blob, DEFLATE-compressed.
        public var largeBlob: LargeBlob?
        /// Whether the credential is for secure payment confirmation.
        public var payments: Bool?

        public init(
            hmacCredentials: HMACCredentials? = nil, credBlob: [UInt8]? = nil, largeBlob: LargeBlob? = nil,
            payments: Bool? = nil
        ) {
            self.hmacCredentials = hmacCredentials
            self.credBlob = credBlob
            self.largeBlob = largeBlob
            self.payments = payments
        }

        var isEmpty: Bool { hmacCredentials == nil && credBlob == nil && largeBlob == nil && payments == nil }
    }

    /// `hmacCredentials`: the hmac-secret CredRandoms with and without user verification (secrets).
    public struct HMACCredentials: Sendable {
        public static let hmacSHA256 = "hmac-sha256"

        public var algorithm: String
        public var credWithUV: [UInt8]
        public var credWithoutUV: [UInt8]

        public init(algorithm: String = HMACCredentials.hmacSHA256, credWithUV: [UInt8], credWithoutUV: [UInt8]) {
            self.algorithm = algorithm
            self.credWithUV = credWithUV
            self.credWithoutUV = credWithoutUV
        }
    }

    /// `largeBlob`: the credential's large blob as the platform stored it, compressed, and its size uncompressed.
    public struct LargeBlob: Sendable {
        public var uncompressedSize: UInt64
        public var data: [UInt8]

        public init(uncompressedSize: UInt64, data: [UInt8]) {
            self.uncompressedSize = uncompressedSize
            self.data = data
        }
    }
}

extension CXF.Header {
    /// Every passkey in the document with where it is, in document order.
    public var passkeys: [(location: String, item: CXF.Item, passkey: CXF.Passkey)] {
        var found: [(String, CXF.Item, CXF.Passkey)] = []
        for (a, account) in accounts.enumerated() {
            for (i, item) in account.items.enumerated() {
                for (c, credential) in item.credentials.enumerated() {
                    if case .passkey(let passkey) = credential {
                        found.append(("accounts[\(a)].items[\(i)].credentials[\(c)]", item, passkey))
                    }
                }
            }
        }
        return found
    }
}
