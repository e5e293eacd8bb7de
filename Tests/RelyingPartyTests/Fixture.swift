import CBOR
import Crypto
import RelyingParty
import WebAuthn

/// A software authenticator in a few lines, built from the WebAuthn module's types, for ceremonies
/// whose every field a test can choose. The vectors, not these, are the independent cross-check.
struct Fixture {
    static let rpID = "example.org"
    static let origin = "https://example.org"
    static let user = UserEntity(id: Array("user-1".utf8), name: "alice@example.org", displayName: "Alice")

    let credentialKey = P256.Signing.PrivateKey()
    let credentialID: [UInt8] = Array(repeating: 0x5A, count: 16)
    let aaguid = AAGUID(bytes: Array(0x10..<0x20))!

    var verifier = RelyingPartyVerifier(relyingParty: RelyingPartyEntity(id: rpID), origins: [origin])

    var rpIDHash: [UInt8] { Array(SHA256.hash(data: Array(Self.rpID.utf8))) }

    func clientData(
        _ type: CollectedClientData.CeremonyType, challenge: [UInt8], origin: String = origin,
        crossOrigin: Bool = false, topOrigin: String? = nil
    ) -> [UInt8] {
        CollectedClientData(
            type: type, challenge: challenge, origin: origin, crossOrigin: crossOrigin, topOrigin: topOrigin
        ).jsonBytes
    }

    func registrationData(flags: AuthenticatorFlags = .userPresent, signCount: UInt32 = 0) -> AuthenticatorData {
        AuthenticatorData(
            relyingPartyIDHash: rpIDHash, flags: flags, signCount: signCount,
            attestedCredentialData: AttestedCredentialData(
                aaguid: aaguid, credentialID: credentialID, publicKey: COSEKey(publicKey: credentialKey.publicKey)))
    }

    /// A `none` registration response for `options`.
    func noneRegistration(
        _ options: RegistrationOptions, flags: AuthenticatorFlags = .userPresent, signCount: UInt32 = 0
    ) -> RegistrationResponse {
        let object = AttestationObject(
            format: "none", statement: [:], authenticatorData: registrationData(flags: flags, signCount: signCount))
        return RegistrationResponse(
            clientDataJSON: clientData(.create, challenge: options.challenge), attestationObject: object.bytes)
    }

    /// A `packed` self-attestation registration response for `options`.
    func packedSelfRegistration(_ options: RegistrationOptions, alg: Int = -7, tamper: Bool = false)
        throws -> RegistrationResponse
    {
        let clientDataJSON = clientData(.create, challenge: options.challenge)
        let data = registrationData(flags: [.userPresent, .userVerified])
        var signed = data.bytes + Array(SHA256.hash(data: clientDataJSON))
        if tamper { signed[0] ^= 1 }
        let signature = try credentialKey.signature(for: signed).derRepresentation
        let object = AttestationObject(
            format: "packed", statement: ["alg": .int(alg), "sig": .bytes(Array(signature))], authenticatorData: data)
        return RegistrationResponse(clientDataJSON: clientDataJSON, attestationObject: object.bytes)
    }

    /// An assertion for `options`, signed with the credential key.
    func assertion(
        _ options: AuthenticationOptions, flags: AuthenticatorFlags = .userPresent, signCount: UInt32,
        userHandle: [UInt8]? = Fixture.user.id, clientDataJSON: [UInt8]? = nil
    ) throws -> AuthenticationResponse {
        let json = clientDataJSON ?? clientData(.get, challenge: options.challenge)
        let data = AuthenticatorData(relyingPartyIDHash: rpIDHash, flags: flags, signCount: signCount).bytes
        let signature = try credentialKey.signature(for: data + Array(SHA256.hash(data: json))).derRepresentation
        return AuthenticationResponse(
            credentialID: credentialID, clientDataJSON: json, authenticatorData: data, signature: Array(signature),
            userHandle: userHandle)
    }

    /// Registers a `none` credential with the given flags and counter, returning its record.
    func register(flags: AuthenticatorFlags = .userPresent, signCount: UInt32 = 0) throws -> CredentialRecord {
        let options = RegistrationOptions(challenge: Array(repeating: 1, count: 32), user: Self.user)
        return try verifier.verifyRegistration(
            noneRegistration(options, flags: flags, signCount: signCount), options: options
        ).credential
    }
}
