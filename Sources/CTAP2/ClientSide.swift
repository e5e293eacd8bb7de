import Basics
import CBOR
import Crypto
import WebAuthn

/// The platform side of CTAP2: builds requests and reads responses, as a browser does before it
/// hands the result to a relying party. Used by the demo and by the hybrid client role.
public enum CTAPClient {
    /// An authenticatorMakeCredential message (command byte and CBOR) for `algorithms` (ES256 by default).
    public static func makeCredentialMessage(
        clientDataHash: [UInt8],
        relyingPartyID: String,
        relyingPartyName: String?,
        userHandle: [UInt8],
        userName: String,
        userDisplayName: String?,
        excludeList: [[UInt8]] = [],
        discoverable: Bool = true,
        userVerification: Bool = true,
        extensions: [CBORValue: CBORValue] = [:],
        algorithms: [COSEAlgorithm] = [.es256]
    ) -> [UInt8] {
        var rp: [CBORValue: CBORValue] = ["id": .text(relyingPartyID)]
        if let relyingPartyName { rp["name"] = .text(relyingPartyName) }
        var user: [CBORValue: CBORValue] = ["id": .bytes(userHandle), "name": .text(userName)]
        if let userDisplayName { user["displayName"] = .text(userDisplayName) }
        var parameters: [CBORValue: CBORValue] = [
            1: .bytes(clientDataHash),
            2: .map(rp),
            3: .map(user),
            4: .array(algorithms.map { ["alg": .int($0.rawValue), "type": "public-key"] }),
        ]
        if !excludeList.isEmpty {
            parameters[5] = .array(excludeList.map { CredentialDescriptor(id: $0).cborRepresentation })
        }
        if !extensions.isEmpty { parameters[6] = .map(extensions) }
        var options: [CBORValue: CBORValue] = [:]
        if discoverable { options["rk"] = true }
        if userVerification { options["uv"] = true }
        if !options.isEmpty { parameters[7] = .map(options) }
        return [CTAPCommand.makeCredential.rawValue] + CBORValue.map(parameters).encoded()
    }

    /// An authenticatorGetAssertion message (command byte and CBOR).
    public static func getAssertionMessage(
        relyingPartyID: String,
        clientDataHash: [UInt8],
        allowList: [[UInt8]] = [],
        userPresence: Bool = true,
        userVerification: Bool = true,
        extensions: [CBORValue: CBORValue] = [:]
    ) -> [UInt8] {
        var parameters: [CBORValue: CBORValue] = [1: .text(relyingPartyID), 2: .bytes(clientDataHash)]
        if !allowList.isEmpty {
            parameters[3] = .array(allowList.map { CredentialDescriptor(id: $0).cborRepresentation })
        }
        if !extensions.isEmpty { parameters[4] = .map(extensions) }
        var options: [CBORValue: CBORValue] = [:]
        if !userPresence { options["up"] = false }
        if userVerification { options["uv"] = true }
        if !options.isEmpty { parameters[5] = .map(options) }
        return [CTAPCommand.getAssertion.rawValue] + CBORValue.map(parameters).encoded()
    }

    /// authenticatorClientPIN getKeyAgreement for `pinUvAuthProtocol`.
    public static func getKeyAgreementMessage(pinUvAuthProtocol: PinUvAuthProtocol = .two) -> [UInt8] {
        [CTAPCommand.clientPIN.rawValue] + CBORValue.map([1: .int(pinUvAuthProtocol.rawValue), 2: 2]).encoded()
    }

    /// Splits a response into its status and decoded body; a non-zero status is thrown. A platform talking to
    /// authenticators it did not build passes a decoder with `requiresCanonicalForm: false`.
    static func body(of response: [UInt8], decoder: CBORDecoder = CBORDecoder()) throws(CTAPError) -> CBORValue {
        guard let status = response.first else { throw .invalidLength }
        guard status == 0 else { throw CTAPError(rawValue: status) }
        do {
            return try decoder.decode(response.dropFirst())
        } catch {
            throw CTAPError(error)
        }
    }
}

/// A makeCredential response turned into the WebAuthn attestation object.
public struct MakeCredentialResponse: Sendable {
    public var attestationObject: AttestationObject
    /// The largeBlobKey (key 5), when the request asked for one and the credential is discoverable.
    public var largeBlobKey: [UInt8]?

    /// Reads the authenticator's response (status byte and CBOR); an error status is thrown. `decoder` also reads
    /// the COSE key and extensions inside the authenticator data.
    public init(ctapResponse: [UInt8], decoder: CBORDecoder = CBORDecoder()) throws(CTAPError) {
        let map = try CTAPClient.body(of: ctapResponse, decoder: decoder).parameters()
        let format = try map.required(1).text()
        let authenticatorData = try map.required(2).bytes()
        let statement = try map.required(3)
        guard statement.mapValue != nil else { throw .cborUnexpectedType }
        largeBlobKey = try map.optional(5)?.bytes()
        do {
            attestationObject = AttestationObject(
                format: format, statement: statement,
                authenticatorData: try AuthenticatorData(bytes: authenticatorData, decoder: decoder))
        } catch {
            throw .invalidCBOR
        }
    }

    /// The new credential's ID.
    public var credentialID: [UInt8] { attestationObject.authenticatorData.attestedCredentialData?.credentialID ?? [] }
}

/// One getAssertion or getNextAssertion response.
public struct GetAssertionResponse: Sendable {
    public var credentialID: [UInt8]
    public var authenticatorData: [UInt8]
    public var signature: [UInt8]
    public var userHandle: [UInt8]?
    public var userName: String?
    public var userDisplayName: String?
    /// Present on the first response when more assertions can be fetched with getNextAssertion.
    public var numberOfCredentials: Int?
    /// True when the authenticator showed its own account chooser and the user picked this one (key 6).
    public var userSelected: Bool
    /// The credential's largeBlobKey (key 7), when the request asked for it.
    public var largeBlobKey: [UInt8]?

    /// Reads one response (status byte and CBOR); an error status is thrown. The credential may be left out when the
    /// allowList held exactly one (CTAP 2.1 §6.2.2): pass that one's ID as `defaultCredentialID`.
    public init(
        ctapResponse: [UInt8], decoder: CBORDecoder = CBORDecoder(), defaultCredentialID: [UInt8]? = nil
    ) throws(CTAPError) {
        let map = try CTAPClient.body(of: ctapResponse, decoder: decoder).parameters()
        if let credential = map.optional(1) {
            credentialID = try credential.parameters().required("id").bytes()
        } else if let defaultCredentialID {
            credentialID = defaultCredentialID
        } else {
            throw .missingParameter
        }
        authenticatorData = try map.required(2).bytes()
        signature = try map.required(3).bytes()
        let user = try map.optional(4)?.parameters()
        userHandle = try user?.required("id").bytes()
        userName = try user?.optional("name")?.text()
        userDisplayName = try user?.optional("displayName")?.text()
        numberOfCredentials = try map.optional(5)?.int()
        userSelected = try map.optional(6)?.bool() ?? false
        largeBlobKey = try map.optional(7)?.bytes()
    }
}

/// The platform's half of hmac-secret (CTAP 2.1 §12.5) as the WebAuthn prf extension uses it (WebAuthn L3 §10.1.4):
/// one or two salts, each `SHA-256("WebAuthn PRF" ‖ 0x00 ‖ input)`, sent encrypted under a fresh key agreement. At
/// registration the same input goes as CTAP 2.2's `hmac-secret-mc` (``registrationExtension``), beside
/// `"hmac-secret": true`, and the output comes back under that name.
public struct PRFEvaluation: Sendable {
    /// The extension that evaluates the PRF at getAssertion.
    public static let assertionExtension = "hmac-secret"
    /// The extension that evaluates the PRF at makeCredential (CTAP 2.2).
    public static let registrationExtension = "hmac-secret-mc"

    private let sharedSecret: [UInt8]
    private let pinProtocol: PinUvAuthProtocol
    /// The extension the evaluation goes in and comes back under.
    public let extensionName: String
    /// The extensions entry: `{name: {1: keyAgreement, 2: saltEnc, 3: saltAuth, 4: protocol}}`.
    public let extensionInput: [CBORValue: CBORValue]

    /// `keyAgreementResponse` is the authenticator's getKeyAgreement answer; `iv` 16 random bytes. Protocol two,
    /// with a platform key from the system's generator.
    public init(input: [UInt8], keyAgreementResponse: [UInt8], iv: [UInt8]) throws(CTAPError) {
        try self.init(
            first: input, second: nil, keyAgreementResponse: keyAgreementResponse, pinProtocol: .two,
            platformKey: P256.KeyAgreement.PrivateKey(), iv: iv)
    }

    /// Evaluates at `first` and, when given, `second` with `pinProtocol` (the authenticator's getKeyAgreement answer
    /// must be for the same protocol), the platform's key agreement key `platformKey` and, for protocol two, the IV.
    /// `extensionName` is ``assertionExtension`` or ``registrationExtension``.
    public init(
        first: [UInt8], second: [UInt8]?, keyAgreementResponse: [UInt8], pinProtocol: PinUvAuthProtocol,
        platformKey: P256.KeyAgreement.PrivateKey, iv: [UInt8], extensionName: String = assertionExtension
    ) throws(CTAPError) {
        let authenticatorKey = try CTAPClient.body(
            of: keyAgreementResponse, decoder: CBORDecoder(requiresCanonicalForm: false)
        )
        .parameters().required(1)
        self.pinProtocol = pinProtocol
        self.extensionName = extensionName
        do {
            sharedSecret = try pinProtocol.sharedSecret(privateKey: platformKey, platformKey: authenticatorKey)
            let salts = ([first] + (second.map { [$0] } ?? [])).flatMap { input in
                SHA256.hash(data: Array("WebAuthn PRF".utf8) + [0] + input).bytes
            }
            let saltEnc = try pinProtocol.encrypt(key: sharedSecret, plaintext: salts, iv: iv)
            extensionInput = [
                .text(extensionName): [
                    1: PinUvAuthProtocol.coseKey(platformKey.publicKey), 2: .bytes(saltEnc),
                    3: .bytes(pinProtocol.authenticate(key: sharedSecret, message: saltEnc)),
                    4: .int(pinProtocol.rawValue),
                ]
            ]
        } catch {
            throw .invalidParameter
        }
    }

    /// The first prf result (32 bytes) from the authenticator data, or nil when it has none.
    public func result(from authenticatorData: AuthenticatorData) throws(CTAPError) -> [UInt8]? {
        try results(from: authenticatorData)?.first
    }

    /// The prf results (one or two of 32 bytes, as many as salts were sent) from the authenticator data of the
    /// assertion or, for ``registrationExtension``, the new credential; nil when it has none.
    public func results(from authenticatorData: AuthenticatorData) throws(CTAPError) -> [[UInt8]]? {
        guard let encrypted = authenticatorData.extensions?.mapValue?[.text(extensionName)]?.bytesValue else {
            return nil
        }
        let output: [UInt8]
        do {
            output = try pinProtocol.decrypt(key: sharedSecret, ciphertext: encrypted)
        } catch {
            throw .invalidLength
        }
        guard output.count == 32 || output.count == 64 else { throw .invalidLength }
        return output.count == 32 ? [output] : [Array(output[..<32]), Array(output[32...])]
    }
}
