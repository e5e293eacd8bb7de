import Basics
import CBOR

/// A 16-byte authenticator model identifier.
public struct AAGUID: Hashable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// All zeros, as `none` attestation may report.
    public static let zero = AAGUID(bytes: [UInt8](repeating: 0, count: 16))!

    /// The canonical 8-4-4-4-12 form.
    public var description: String {
        let parts = [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { Array(bytes[$0]).hexString }
        return parts.joined(separator: "-")
    }
}

/// The flags byte of authenticator data (WebAuthn §6.1).
public struct AuthenticatorFlags: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// UP: the user was present.
    public static let userPresent = AuthenticatorFlags(rawValue: 0x01)
    /// UV: the user was verified.
    public static let userVerified = AuthenticatorFlags(rawValue: 0x04)
    /// BE: the credential may be backed up (fixed for the credential's life).
    public static let backupEligible = AuthenticatorFlags(rawValue: 0x08)
    /// BS: the credential is backed up now.
    public static let backupState = AuthenticatorFlags(rawValue: 0x10)
    /// AT: attested credential data follows.
    public static let attestedCredentialData = AuthenticatorFlags(rawValue: 0x40)
    /// ED: an extensions map follows.
    public static let extensionData = AuthenticatorFlags(rawValue: 0x80)
}

/// Attested credential data: AAGUID, credential ID and the credential's public key.
public struct AttestedCredentialData: Hashable, Sendable {
    public var aaguid: AAGUID
    public var credentialID: [UInt8]
    public var publicKey: COSEKey

    public init(aaguid: AAGUID, credentialID: [UInt8], publicKey: COSEKey) {
        self.aaguid = aaguid
        self.credentialID = credentialID
        self.publicKey = publicKey
    }
}

/// Why authenticator data could not be parsed.
public enum AuthenticatorDataError: Error, Hashable, Sendable {
    /// Shorter than the 37 fixed bytes, or than the lengths inside it say.
    case truncated
    /// The credential ID is longer than 1023 bytes.
    case credentialIDTooLong(Int)
    /// The credential public key is not valid CBOR.
    case invalidCBOR(CBORError)
    /// The credential public key is not a supported COSE key.
    case invalidPublicKey(COSEError)
    /// The extensions are not a CBOR map.
    case extensionsNotAMap
    /// Bytes remain that the flags do not account for.
    case trailingBytes
}

/// Authenticator data (WebAuthn §6.1): rpIdHash ‖ flags ‖ signCount ‖ [attested credential data] ‖ [extensions].
///
/// Parsing keeps the exact bytes, since signatures cover them.
public struct AuthenticatorData: Hashable, Sendable {
    public var relyingPartyIDHash: [UInt8]
    public var flags: AuthenticatorFlags
    public var signCount: UInt32
    public var attestedCredentialData: AttestedCredentialData?
    public var extensions: CBORValue?
    /// The bytes as received, or as built by `init(relyingPartyIDHash:…)`.
    public private(set) var bytes: [UInt8]

    /// Builds authenticator data; the AT and ED flags follow from what is given.
    public init(
        relyingPartyIDHash: [UInt8],
        flags: AuthenticatorFlags,
        signCount: UInt32,
        attestedCredentialData: AttestedCredentialData? = nil,
        extensions: CBORValue? = nil
    ) {
        var flags = flags
        if attestedCredentialData != nil {
            flags.insert(.attestedCredentialData)
        } else {
            flags.remove(.attestedCredentialData)
        }
        if extensions != nil { flags.insert(.extensionData) } else { flags.remove(.extensionData) }
        self.relyingPartyIDHash = relyingPartyIDHash
        self.flags = flags
        self.signCount = signCount
        self.attestedCredentialData = attestedCredentialData
        self.extensions = extensions

        var bytes = relyingPartyIDHash
        bytes.reserveCapacity(37 + (attestedCredentialData == nil ? 0 : 160))
        bytes.append(flags.rawValue)
        bytes.append(contentsOf: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: signCount >> $0) })
        if let attested = attestedCredentialData {
            bytes.append(contentsOf: attested.aaguid.bytes)
            bytes.append(UInt8(attested.credentialID.count >> 8))
            bytes.append(UInt8(attested.credentialID.count & 0xFF))
            bytes.append(contentsOf: attested.credentialID)
            attested.publicKey.coseRepresentation.encode(into: &bytes)
        }
        extensions?.encode(into: &bytes)
        self.bytes = bytes
    }

    /// Parses authenticator data; `decoder` reads the embedded COSE key and extensions.
    public init(bytes: [UInt8], decoder: CBORDecoder = CBORDecoder()) throws(AuthenticatorDataError) {
        guard bytes.count >= 37 else { throw .truncated }
        self.bytes = bytes
        relyingPartyIDHash = Array(bytes[0..<32])
        flags = AuthenticatorFlags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var offset = 37
        if flags.contains(.attestedCredentialData) {
            guard bytes.count >= offset + 18 else { throw .truncated }
            let aaguid = AAGUID(bytes: Array(bytes[offset..<offset + 16]))!
            let idLength = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard idLength <= 1023 else { throw .credentialIDTooLong(idLength) }
            guard bytes.count >= offset + idLength else { throw .truncated }
            let credentialID = Array(bytes[offset..<offset + idLength])
            offset += idLength
            let key: CBORValue
            do {
                let (value, length) = try decoder.decodePrefix(bytes[offset...])
                key = value
                offset += length
            } catch {
                throw .invalidCBOR(error)
            }
            do {
                attestedCredentialData = AttestedCredentialData(
                    aaguid: aaguid, credentialID: credentialID,
                    publicKey: try COSEKey(coseRepresentation: key))
            } catch {
                throw .invalidPublicKey(error)
            }
        } else {
            attestedCredentialData = nil
        }
        if flags.contains(.extensionData) {
            let decoded: (value: CBORValue, length: Int)
            do {
                decoded = try decoder.decodePrefix(bytes[offset...])
            } catch {
                throw .invalidCBOR(error)
            }
            guard decoded.value.mapValue != nil else { throw .extensionsNotAMap }
            extensions = decoded.value
            offset += decoded.length
        } else {
            extensions = nil
        }
        guard offset == bytes.count else { throw .trailingBytes }
    }
}
