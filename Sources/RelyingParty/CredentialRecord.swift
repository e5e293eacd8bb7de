import Basics
import CBOR
import WebAuthn

/// What a relying party stores about a registered credential (WebAuthn §4 "credential record").
///
/// `Codable` as JSON with WebAuthn's names: byte strings are unpadded base64url, the public key is
/// its COSE_Key CBOR in base64url, and the AAGUID is in its 8-4-4-4-12 form.
public struct CredentialRecord: Hashable, Sendable, Codable {
    /// The credential ID.
    public var id: [UInt8]
    /// The credential public key.
    public var publicKey: COSEKey
    /// The signature counter last seen.
    public var signCount: UInt32
    /// BE at registration: whether the credential may be backed up. Fixed for the credential's life.
    public var backupEligible: Bool
    /// BS last seen: whether the credential is backed up now.
    public var backupState: Bool
    /// Whether any ceremony with this credential has had the UV flag set.
    public var uvInitialized: Bool
    /// The user handle (`user.id`) the credential was registered for, when the relying party knows it.
    public var userHandle: [UInt8]?
    /// The authenticator model the attested credential data named.
    public var aaguid: AAGUID
    /// The attestation statement format of the registration, for example `none` or `packed`.
    public var attestationFormat: String
    /// The attestation type the registration's statement established.
    public var attestationType: AttestationType
    /// The transports the client reported (`usb`, `hybrid`, …); empty when unknown.
    public var transports: [String]

    /// A record from its parts.
    public init(
        id: [UInt8],
        publicKey: COSEKey,
        signCount: UInt32,
        backupEligible: Bool,
        backupState: Bool,
        uvInitialized: Bool,
        userHandle: [UInt8]? = nil,
        aaguid: AAGUID = .zero,
        attestationFormat: String = "none",
        attestationType: AttestationType = .none,
        transports: [String] = []
    ) {
        self.id = id
        self.publicKey = publicKey
        self.signCount = signCount
        self.backupEligible = backupEligible
        self.backupState = backupState
        self.uvInitialized = uvInitialized
        self.userHandle = userHandle
        self.aaguid = aaguid
        self.attestationFormat = attestationFormat
        self.attestationType = attestationType
        self.transports = transports
    }

    private enum CodingKeys: String, CodingKey {
        case id, publicKey, signCount, backupEligible, backupState, uvInitialized, userHandle, aaguid
        case attestationFormat, attestationType, transports
    }

    /// Decodes the JSON form described on the type.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try Self.decodeBytes(container, .id)
        let keyBytes = try Self.decodeBytes(container, .publicKey)
        do {
            publicKey = try COSEKey(coseRepresentation: try CBORValue(decoding: keyBytes))
        } catch {
            throw DecodingError.dataCorruptedError(
                forKey: .publicKey, in: container, debugDescription: "not an ES256 COSE_Key: \(error)")
        }
        signCount = try container.decode(UInt32.self, forKey: .signCount)
        backupEligible = try container.decode(Bool.self, forKey: .backupEligible)
        backupState = try container.decode(Bool.self, forKey: .backupState)
        uvInitialized = try container.decode(Bool.self, forKey: .uvInitialized)
        userHandle = try container.contains(.userHandle) ? Self.decodeBytes(container, .userHandle) : nil
        let aaguidText = try container.decode(String.self, forKey: .aaguid)
        guard let aaguid = AAGUID(string: aaguidText) else {
            throw DecodingError.dataCorruptedError(
                forKey: .aaguid, in: container, debugDescription: "not an 8-4-4-4-12 AAGUID")
        }
        self.aaguid = aaguid
        attestationFormat = try container.decode(String.self, forKey: .attestationFormat)
        attestationType = try container.decode(AttestationType.self, forKey: .attestationType)
        transports = try container.decodeIfPresent([String].self, forKey: .transports) ?? []
    }

    /// Encodes the JSON form described on the type.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.base64URLEncodedString, forKey: .id)
        try container.encode(publicKey.coseRepresentation.encoded().base64URLEncodedString, forKey: .publicKey)
        try container.encode(signCount, forKey: .signCount)
        try container.encode(backupEligible, forKey: .backupEligible)
        try container.encode(backupState, forKey: .backupState)
        try container.encode(uvInitialized, forKey: .uvInitialized)
        try container.encodeIfPresent(userHandle?.base64URLEncodedString, forKey: .userHandle)
        try container.encode(aaguid.description, forKey: .aaguid)
        try container.encode(attestationFormat, forKey: .attestationFormat)
        try container.encode(attestationType, forKey: .attestationType)
        try container.encode(transports, forKey: .transports)
    }

    private static func decodeBytes(
        _ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys
    ) throws -> [UInt8] {
        let text = try container.decode(String.self, forKey: key)
        guard let bytes = [UInt8](base64URLEncoded: text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not base64url")
        }
        return bytes
    }
}

extension AAGUID {
    /// Parses the 8-4-4-4-12 hexadecimal form that `description` writes; `nil` for anything else.
    public init?(string: String) {
        let groups = string.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12], let bytes = [UInt8](hex: groups.joined()) else {
            return nil
        }
        self.init(bytes: bytes)
    }
}
