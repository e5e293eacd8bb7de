import Basics
import CBOR
import Crypto
import WebAuthn

/// The platform side of CTAP2: builds requests and reads responses, as a browser does before it
/// hands the result to a relying party. Used by the demo and by the hybrid client role.
public enum CTAPClient {
    /// An authenticatorMakeCredential message (command byte and CBOR) for ES256.
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
        extensions: [CBORValue: CBORValue] = [:]
    ) -> [UInt8] {
        var rp: [CBORValue: CBORValue] = ["id": .text(relyingPartyID)]
        if let relyingPartyName { rp["name"] = .text(relyingPartyName) }
        var user: [CBORValue: CBORValue] = ["id": .bytes(userHandle), "name": .text(userName)]
        if let userDisplayName { user["displayName"] = .text(userDisplayName) }
        var parameters: [CBORValue: CBORValue] = [
            1: .bytes(clientDataHash),
            2: .map(rp),
            3: .map(user),
            4: [["alg": .int(COSEAlgorithm.es256.rawValue), "type": "public-key"]],
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

    /// Splits a response into its status and decoded body; a non-zero status is thrown.
    static func body(of response: [UInt8]) throws(CTAPError) -> CBORValue {
        guard let status = response.first else { throw .invalidLength }
        guard status == 0 else { throw CTAPError(rawValue: status) }
        do {
            return try CBORValue(decoding: response.dropFirst())
        } catch {
            throw CTAPError(error)
        }
    }
}

/// A makeCredential response turned into the WebAuthn attestation object.
public struct MakeCredentialResponse: Sendable {
    public var attestationObject: AttestationObject

    /// Reads the authenticator's response (status byte and CBOR); an error status is thrown.
    public init(ctapResponse: [UInt8]) throws(CTAPError) {
        let map = try CTAPClient.body(of: ctapResponse).parameters()
        let format = try map.required(1).text()
        let authenticatorData = try map.required(2).bytes()
        let statement = try map.required(3)
        guard statement.mapValue != nil else { throw .cborUnexpectedType }
        do {
            attestationObject = AttestationObject(
                format: format, statement: statement, authenticatorData: try AuthenticatorData(bytes: authenticatorData)
            )
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

    public init(ctapResponse: [UInt8]) throws(CTAPError) {
        let map = try CTAPClient.body(of: ctapResponse).parameters()
        credentialID = try map.required(1).parameters().required("id").bytes()
        authenticatorData = try map.required(2).bytes()
        signature = try map.required(3).bytes()
        let user = try map.optional(4)?.parameters()
        userHandle = try user?.required("id").bytes()
        userName = try user?.optional("name")?.text()
        userDisplayName = try user?.optional("displayName")?.text()
        numberOfCredentials = try map.optional(5)?.int()
    }
}

/// The platform's half of hmac-secret (CTAP 2.1 §12.5) as the WebAuthn prf extension uses it: one salt,
/// `SHA-256("WebAuthn PRF" ‖ 0x00 ‖ input)`, sent encrypted under a fresh key agreement with protocol two.
public struct PRFEvaluation: Sendable {
    private let sharedSecret: [UInt8]
    /// The getAssertion extensions entry: `{"hmac-secret": {1: keyAgreement, 2: saltEnc, 3: saltAuth, 4: 2}}`.
    public let extensionInput: [CBORValue: CBORValue]

    /// `keyAgreementResponse` is the authenticator's getKeyAgreement answer; `iv` 16 random bytes.
    public init(input: [UInt8], keyAgreementResponse: [UInt8], iv: [UInt8]) throws(CTAPError) {
        let pinProtocol = PinUvAuthProtocol.two
        let authenticatorKey = try CTAPClient.body(of: keyAgreementResponse).parameters().required(1)
        let platformKey = P256.KeyAgreement.PrivateKey()
        do {
            sharedSecret = try pinProtocol.sharedSecret(privateKey: platformKey, platformKey: authenticatorKey)
            let salt = SHA256.hash(data: Array("WebAuthn PRF".utf8) + [0] + input).bytes
            let saltEnc = try pinProtocol.encrypt(key: sharedSecret, plaintext: salt, iv: iv)
            extensionInput = [
                "hmac-secret": [
                    1: PinUvAuthProtocol.coseKey(platformKey.publicKey), 2: .bytes(saltEnc),
                    3: .bytes(pinProtocol.authenticate(key: sharedSecret, message: saltEnc)), 4: 2,
                ]
            ]
        } catch {
            throw .invalidParameter
        }
    }

    /// The prf result (32 bytes) from an assertion's authenticator data, or nil when it has none.
    public func result(from authenticatorData: AuthenticatorData) throws(CTAPError) -> [UInt8]? {
        guard let encrypted = authenticatorData.extensions?.mapValue?["hmac-secret"]?.bytesValue else { return nil }
        do {
            let output = try PinUvAuthProtocol.two.decrypt(key: sharedSecret, ciphertext: encrypted)
            guard output.count == 32 else { throw CTAPError.invalidLength }
            return output
        } catch {
            throw .invalidLength
        }
    }
}
