import CBOR
import Crypto
import Foundation
import Synchronization

/// The authenticator extensions implemented here (CTAP 2.1 §12 and CTAP 2.2), as getInfo lists them.
public enum AuthenticatorExtension {
    static let credProtect = "credProtect"
    static let hmacSecret = "hmac-secret"
    /// CTAP 2.2's hmac-secret at registration: the PRF evaluated by makeCredential (§12.8).
    static let hmacSecretAtCreation = "hmac-secret-mc"
    static let credBlob = "credBlob"
    static let largeBlobKey = "largeBlobKey"
    static let minPinLength = "minPinLength"
    /// CTAP 2.2's thirdPartyPayment: the credential may be used for payments on other sites (Secure Payment
    /// Confirmation); stored at makeCredential, reported at getAssertion.
    static let thirdPartyPayment = "thirdPartyPayment"

    public static let all = [
        credProtect, hmacSecret, hmacSecretAtCreation, credBlob, largeBlobKey, minPinLength, thirdPartyPayment,
    ]

    /// The longest credBlob kept (getInfo maxCredBlobLength; the spec's minimum is 32).
    static let maximumCredentialBlobLength = 32
}

/// makeCredential's extension inputs. Unknown extensions are ignored; a known one with a value of the wrong type is
/// CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
struct MakeCredentialExtensions {
    var credentialProtection: CredentialProtection?
    var hmacSecret = false
    /// hmac-secret-mc: salts to evaluate at once. Only with `hmacSecret` (the platform sends both; CTAP 2.2); alone it is
    /// ignored, as an unknown extension would be.
    var hmacSecretAtCreation: HMACSecretInput?
    var credentialBlob: [UInt8]?
    var largeBlobKey = false
    var minPinLength = false
    var thirdPartyPayment = false

    init(cbor: CBORValue?) throws(CTAPError) {
        guard let map = try cbor?.parameters() else { return }
        if let level = try map.optional(.text(AuthenticatorExtension.credProtect))?.int() {
            guard let protection = CredentialProtection(rawValue: level) else { throw .invalidParameter }
            credentialProtection = protection
        }
        hmacSecret = try map.optional(.text(AuthenticatorExtension.hmacSecret))?.bool() ?? false
        if let input = map.optional(.text(AuthenticatorExtension.hmacSecretAtCreation)) {
            let parsed = try HMACSecretInput(cbor: input)
            if hmacSecret { hmacSecretAtCreation = parsed }
        }
        credentialBlob = try map.optional(.text(AuthenticatorExtension.credBlob))?.bytes()
        if let requested = try map.optional(.text(AuthenticatorExtension.largeBlobKey))?.bool() {
            // largeBlobKey is only ever requested as true (§12.3).
            guard requested else { throw .invalidOption }
            largeBlobKey = true
        }
        minPinLength = try map.optional(.text(AuthenticatorExtension.minPinLength))?.bool() ?? false
        thirdPartyPayment = try map.optional(.text(AuthenticatorExtension.thirdPartyPayment))?.bool() ?? false
    }
}

/// hmac-secret's input, at getAssertion and as hmac-secret-mc at makeCredential: the platform's key, the encrypted
/// salts, their MAC and the protocol (default one).
struct HMACSecretInput {
    var keyAgreement: CBORValue
    var saltEnc: [UInt8]
    var saltAuth: [UInt8]
    var pinUvAuthProtocol: PinUvAuthProtocol

    init(cbor: CBORValue) throws(CTAPError) {
        let input = try cbor.parameters()
        keyAgreement = try input.required(1)
        saltEnc = try input.required(2).bytes()
        saltAuth = try input.required(3).bytes()
        pinUvAuthProtocol = try Authenticator.supportedProtocol(try input.optional(4)?.int() ?? 1)
    }
}

/// getAssertion's extension inputs.
struct GetAssertionExtensions {
    var hmacSecret: HMACSecretInput?
    var credentialBlob = false
    var largeBlobKey = false
    var thirdPartyPayment = false

    init(cbor: CBORValue?) throws(CTAPError) {
        guard let map = try cbor?.parameters() else { return }
        hmacSecret = try map.optional(.text(AuthenticatorExtension.hmacSecret)).map {
            (input) throws(CTAPError) in try HMACSecretInput(cbor: input)
        }
        credentialBlob = try map.optional(.text(AuthenticatorExtension.credBlob))?.bool() ?? false
        if let requested = try map.optional(.text(AuthenticatorExtension.largeBlobKey))?.bool() {
            guard requested else { throw .invalidOption }
            largeBlobKey = true
        }
        thirdPartyPayment = try map.optional(.text(AuthenticatorExtension.thirdPartyPayment))?.bool() ?? false
    }
}

/// hmac-secret, ready to answer for each credential of one getAssertion: the salts are decrypted once.
struct HMACSecretSession {
    var pinUvAuthProtocol: PinUvAuthProtocol
    var sharedSecret: [UInt8]
    var salts: [[UInt8]]
    /// The IV for protocol two's encryption of the outputs, one per response.
    var iv: [UInt8]
}

/// What getAssertion and getNextAssertion add for each credential.
struct AssertionExtensionOutputs {
    var authenticatorData: CBORValue?
    var largeBlobKey: [UInt8]?
}

extension Authenticator {
    /// The extensions part of makeCredential: the values stored with the credential and the outputs in the
    /// authenticator data, hmac-secret-mc's evaluated with the CredRandom of this response's UV flag.
    func applyExtensions(
        _ extensions: MakeCredentialExtensions, to credential: inout StoredCredential, settings: AuthenticatorSettings,
        hmacSecret session: HMACSecretSession?, userVerified: Bool
    ) throws(CTAPError) -> CBORValue? {
        var outputs: [CBORValue: CBORValue] = [:]
        if let protection = extensions.credentialProtection {
            credential.credentialProtection = protection
            outputs[.text(AuthenticatorExtension.credProtect)] = .int(protection.rawValue)
        }
        if extensions.hmacSecret {
            credential.hmacSecret = true
            outputs[.text(AuthenticatorExtension.hmacSecret)] = true
            if let session {
                outputs[.text(AuthenticatorExtension.hmacSecretAtCreation)] = .bytes(
                    try Self.hmacSecretOutput(credential, session: session, userVerified: userVerified))
            }
        }
        if let blob = extensions.credentialBlob {
            let fits = blob.count <= AuthenticatorExtension.maximumCredentialBlobLength
            if fits { credential.credentialBlob = blob }
            outputs[.text(AuthenticatorExtension.credBlob)] = .bool(fits)
        }
        // A largeBlobKey is only for discoverable credentials (§12.3); it has no authenticator data output.
        if extensions.largeBlobKey && credential.isDiscoverable { credential.largeBlobKey = true }
        if extensions.minPinLength,
            settings.minimumPINLengthRelyingParties.contains(credential.relyingPartyID)
        {
            outputs[.text(AuthenticatorExtension.minPinLength)] = .int(settings.minimumPINLength)
        }
        if extensions.thirdPartyPayment {
            credential.thirdPartyPayment = true
            outputs[.text(AuthenticatorExtension.thirdPartyPayment)] = true
        }
        return outputs.isEmpty ? nil : .map(outputs)
    }

    /// Starts hmac-secret for one getAssertion (§12.5): the shared secret from the platform's key (a bad key is
    /// CTAP1_ERR_INVALID_PARAMETER), saltAuth checked (CTAP2_ERR_PIN_AUTH_INVALID), and one or two 32-byte salts
    /// decrypted (a failed decryption or any other length is CTAP1_ERR_INVALID_PARAMETER).
    func hmacSecretSession(_ input: HMACSecretInput) throws(CTAPError) -> HMACSecretSession {
        let pinProtocol = input.pinUvAuthProtocol
        let key = state.withLock { $0.keyAgreementKey }
        let shared: [UInt8]
        do {
            shared = try pinProtocol.sharedSecret(privateKey: key, platformKey: input.keyAgreement)
        } catch {
            throw .invalidParameter
        }
        guard pinProtocol.verify(key: shared, message: input.saltEnc, signature: input.saltAuth) else {
            throw .pinAuthInvalid
        }
        let salts: [UInt8]
        do {
            salts = try pinProtocol.decrypt(key: shared, ciphertext: input.saltEnc)
        } catch {
            throw .invalidParameter
        }
        guard salts.count == 32 || salts.count == 64 else { throw .invalidParameter }
        return HMACSecretSession(
            pinUvAuthProtocol: pinProtocol, sharedSecret: shared,
            salts: salts.count == 32 ? [salts] : [Array(salts[..<32]), Array(salts[32...])],
            iv: environment.randomBytes(16))
    }

    /// The per-credential outputs: hmac-secret (for credentials made with it), credBlob, thirdPartyPayment (whether
    /// the credential was made for it) and largeBlobKey.
    static func extensionOutputs(
        for credential: StoredCredential, requested: GetAssertionExtensions, hmacSecret: HMACSecretSession?,
        userVerified: Bool
    ) throws(CTAPError) -> AssertionExtensionOutputs {
        var outputs: [CBORValue: CBORValue] = [:]
        if requested.credentialBlob {
            outputs[.text(AuthenticatorExtension.credBlob)] = .bytes(credential.credentialBlob ?? [])
        }
        if requested.thirdPartyPayment {
            outputs[.text(AuthenticatorExtension.thirdPartyPayment)] = .bool(credential.thirdPartyPayment)
        }
        if let hmacSecret, credential.hmacSecret {
            outputs[.text(AuthenticatorExtension.hmacSecret)] = .bytes(
                try hmacSecretOutput(credential, session: hmacSecret, userVerified: userVerified))
        }
        let largeBlobKey =
            requested.largeBlobKey && credential.largeBlobKey ? derivedSecret(credential, label: "largeBlobKey") : nil
        return AssertionExtensionOutputs(
            authenticatorData: outputs.isEmpty ? nil : .map(outputs), largeBlobKey: largeBlobKey)
    }

    /// hmac-secret's encrypted output for one credential: HMAC-SHA-256 of each salt under the CredRandom that matches
    /// the response's UV flag, encrypted to the platform with the session's shared secret (§12.5; hmac-secret-mc in CTAP 2.2).
    static func hmacSecretOutput(
        _ credential: StoredCredential, session: HMACSecretSession, userVerified: Bool
    ) throws(CTAPError) -> [UInt8] {
        let credRandom = derivedSecret(
            credential, label: userVerified ? "hmac-secret CredRandomWithUV" : "hmac-secret CredRandomWithoutUV")
        let key = SymmetricKey(data: credRandom)
        let output = session.salts.flatMap { Array(HMAC<SHA256>.authenticationCode(for: $0, using: key)) }
        do {
            return try session.pinUvAuthProtocol.encrypt(key: session.sharedSecret, plaintext: output, iv: session.iv)
        } catch {
            throw .other
        }
    }

    /// A 32-byte secret of one credential, derived from its private key with HKDF-SHA-256 and a label, so the
    /// store keeps no further secrets: hmac-secret's two CredRandoms and the largeBlobKey.
    static func derivedSecret(_ credential: StoredCredential, label: String) -> [UInt8] {
        derivedBytes(
            from: Array(credential.privateKey.rawRepresentation), salt: Array("passkey credential secrets".utf8),
            info: label, count: 32)
    }
}

extension StoredCredential {
    /// hmac-secret's two CredRandoms (CTAP 2.1 §12.5), as `getAssertion` uses them: derived from the private key,
    /// so a credential exported with its key carries them (CXF `hmacCredentials`) and an import can check them.
    public var hmacSecretCredRandoms: (withUV: [UInt8], withoutUV: [UInt8]) {
        (
            Authenticator.derivedSecret(self, label: "hmac-secret CredRandomWithUV"),
            Authenticator.derivedSecret(self, label: "hmac-secret CredRandomWithoutUV")
        )
    }
}
