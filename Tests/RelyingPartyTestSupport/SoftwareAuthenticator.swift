import Basics
import CBOR
import Crypto
import Foundation
import RelyingParty
import WebAuthn

/// A browser and an authenticator in one, for tests: reads options JSON as a page receives it and answers in the
/// WebAuthn Level 3 JSON forms a page posts (`RegistrationResponseJSON`, `AuthenticationResponseJSON`). Every
/// field a test may want to spoil is a parameter. The interop tests (python-fido2 against `passkey serve`) are the
/// independent cross-check; this only has to be a faithful client.
public struct SoftwareAuthenticator: Sendable {
    public let key: P256.Signing.PrivateKey
    public let credentialID: [UInt8]
    public var aaguid = AAGUID(bytes: Array(0x10..<0x20))!
    /// The origin the "browser" puts in clientDataJSON.
    public var origin: String
    public var signCount: UInt32 = 0
    /// False for a synced passkey, whose counter stays 0 (as this package's authenticator keeps it).
    public var countsSignatures = true
    /// The user handle remembered from the registration, returned with assertions (a discoverable credential).
    public var userHandle: [UInt8]?

    public init(origin: String, credentialID: [UInt8]? = nil, key: P256.Signing.PrivateKey = .init()) {
        self.origin = origin
        self.key = key
        self.credentialID = credentialID ?? Array(SHA256.hash(data: key.publicKey.rawRepresentation))
    }

    /// What a test may change in a response.
    public struct Spoil: Sendable {
        public var origin: String?
        public var type: String?
        public var challenge: [UInt8]?
        public var flags: AuthenticatorFlags = [.userPresent, .userVerified, .backupEligible, .backupState]
        public var rawIDText: String?
        public var idText: String?
        public var credentialType = "public-key"
        public var transports: [String]? = ["usb"]
        public var credentialID: [UInt8]?
        public var rpID: String?

        public init() {}
    }

    /// The `create()` result's `toJSON()` for `optionsJSON` (a `PublicKeyCredentialCreationOptionsJSON`).
    /// Remembers the user handle.
    public mutating func register(optionsJSON: [UInt8], spoil: Spoil = Spoil()) throws -> [UInt8] {
        let options = try Self.object(optionsJSON)
        let rp = try required(options["rp"] as? [String: Any])
        let user = try required(options["user"] as? [String: Any])
        let challenge = try spoil.challenge ?? Self.bytes(options["challenge"])
        userHandle = try Self.bytes(user["id"])
        let rpID = try spoil.rpID ?? required(rp["id"] as? String)
        let clientDataJSON = CollectedClientData(
            type: .create, challenge: challenge, origin: spoil.origin ?? origin
        ).jsonBytes
        let id = spoil.credentialID ?? credentialID
        let authenticatorData = AuthenticatorData(
            relyingPartyIDHash: Array(SHA256.hash(data: Array(rpID.utf8))), flags: spoil.flags,
            signCount: signCount,
            attestedCredentialData: AttestedCredentialData(
                aaguid: aaguid, credentialID: id, publicKey: COSEKey(publicKey: key.publicKey)))
        let attestationObject = AttestationObject(format: "none", statement: [:], authenticatorData: authenticatorData)
        var response: [String: Any] = [
            "clientDataJSON": Self.retyped(clientDataJSON, type: spoil.type).base64URLEncodedString,
            "attestationObject": attestationObject.bytes.base64URLEncodedString,
        ]
        if let transports = spoil.transports { response["transports"] = transports }
        return try Self.credentialJSON(id: id, spoil: spoil, response: response)
    }

    /// The `get()` result's `toJSON()` for `optionsJSON` (a `PublicKeyCredentialRequestOptionsJSON`).
    public mutating func authenticate(optionsJSON: [UInt8], spoil: Spoil = Spoil()) throws -> [UInt8] {
        let options = try Self.object(optionsJSON)
        let challenge = try spoil.challenge ?? Self.bytes(options["challenge"])
        let rpID = try spoil.rpID ?? required(options["rpId"] as? String)
        if countsSignatures { signCount += 1 }
        let clientDataJSON = Self.retyped(
            CollectedClientData(type: .get, challenge: challenge, origin: spoil.origin ?? origin).jsonBytes,
            type: spoil.type)
        let authenticatorData = AuthenticatorData(
            relyingPartyIDHash: Array(SHA256.hash(data: Array(rpID.utf8))), flags: spoil.flags, signCount: signCount
        ).bytes
        let signature = try key.signature(for: authenticatorData + Array(SHA256.hash(data: clientDataJSON)))
        let id = spoil.credentialID ?? credentialID
        let response: [String: Any] = [
            "clientDataJSON": clientDataJSON.base64URLEncodedString,
            "authenticatorData": authenticatorData.base64URLEncodedString,
            "signature": Array(signature.derRepresentation).base64URLEncodedString,
            "userHandle": userHandle.map { $0.base64URLEncodedString as Any } ?? NSNull(),
        ]
        return try Self.credentialJSON(id: id, spoil: spoil, response: response)
    }

    private static func credentialJSON(id: [UInt8], spoil: Spoil, response: [String: Any]) throws -> [UInt8] {
        let object: [String: Any] = [
            "id": spoil.idText ?? id.base64URLEncodedString,
            "rawId": spoil.rawIDText ?? id.base64URLEncodedString,
            "type": spoil.credentialType,
            "authenticatorAttachment": "cross-platform",
            "clientExtensionResults": [String: Any](),
            "response": response,
        ]
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    private static func retyped(_ clientDataJSON: [UInt8], type: String?) -> [UInt8] {
        guard let type else { return clientDataJSON }
        let text = String(decoding: clientDataJSON, as: UTF8.self)
            .replacingOccurrences(of: "\"webauthn.create\"", with: "\"\(type)\"")
            .replacingOccurrences(of: "\"webauthn.get\"", with: "\"\(type)\"")
        return Array(text.utf8)
    }

    /// A JSON object from bytes.
    public static func object(_ json: [UInt8]) throws -> [String: Any] {
        try required(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
    }

    static func bytes(_ value: Any?) throws -> [UInt8] {
        try required((value as? String).flatMap { [UInt8](base64URLEncoded: $0) })
    }
}

/// The value, or a thrown `unexpectedOptions`.
private func required<T>(_ value: T?) throws -> T {
    guard let value else { throw SoftwareAuthenticatorError.unexpectedOptions }
    return value
}

/// The options JSON did not have the shape the authenticator needs.
public enum SoftwareAuthenticatorError: Error {
    case unexpectedOptions
}
