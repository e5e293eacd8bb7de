import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import JSON
import Testing
import WebAuthn
import WebAuthnClient

/// The client extensions, against the in-process authenticator's CTAP2 extensions.
struct ExtensionTests {
    static func create(_ extensions: String, selection: String = #"{"residentKey":"required"}"#) throws
        -> PublicKeyCredentialCreationOptions
    {
        try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(#""authenticatorSelection":\#(selection),"extensions":\#(extensions)"#))
    }

    static func get(_ extra: String) throws -> PublicKeyCredentialRequestOptions {
        try PublicKeyCredentialRequestOptions(json: requestOptionsJSON(extra))
    }

    /// What hmac-secret gives for `input` with the credential's CredRandomWithUV, computed here from the stored key as
    /// the authenticator derives it (HKDF-SHA-256, `Authenticator.derivedSecret`) and as WebAuthn salts it.
    static func expectedPRF(_ credential: StoredCredential, input: [UInt8]) -> [UInt8] {
        let credRandom = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: credential.privateKey.rawRepresentation),
            salt: Array("passkey credential secrets".utf8), info: Array("hmac-secret CredRandomWithUV".utf8),
            outputByteCount: 32)
        let salt = SHA256.hash(data: Array("WebAuthn PRF".utf8) + [0] + input)
        return Array(HMAC<SHA256>.authenticationCode(for: Array(salt), using: credRandom))
    }

    @Test func credPropsReportsTheResidentKeyRequirementUsed() async throws {
        let engine = makeEngine([TestAuthenticator().client])
        let required = try await engine.create(Self.create(#"{"credProps":true}"#), origin: Site.origin)
        #expect(required.clientExtensionResults.credentialProperties == true)
        let discouraged = try await engine.create(
            Self.create(#"{"credProps":true}"#, selection: #"{"residentKey":"discouraged"}"#), origin: Site.origin)
        #expect(discouraged.clientExtensionResults.credentialProperties == false)
        #expect(
            String(decoding: discouraged.clientExtensionResults.jsonValue.serialized(), as: UTF8.self)
                == #"{"credProps":{"rk":false}}"#)
        let none = try await engine.create(Self.create("{}"), origin: Site.origin)
        #expect(none.clientExtensionResults == ClientExtensionOutputs())
    }

    @Test func prfIsEnabledAtRegistrationAndEvaluatesWithUserVerification() async throws {
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        let created = try await engine.create(Self.create(#"{"prf":{}}"#), origin: Site.origin)
        #expect(created.clientExtensionResults.prf == PRFOutputs(enabled: true))
        let stored = try #require(try local.store.credential(id: created.id))

        let assertion = try await engine.get(
            Self.get(
                #""userVerification":"discouraged","extensions":{"prf":{"eval":{"first":"AQID","second":"BAU"}}}"#),
            origin: Site.origin)
        let results = try #require(assertion.clientExtensionResults.prf?.results)
        #expect(results.first == Self.expectedPRF(stored, input: [1, 2, 3]))
        #expect(results.second == Self.expectedPRF(stored, input: [4, 5]))
        // The PRF is the user-verified one, so prf asked for verification though the RP discouraged it.
        #expect(local.user.seen.last?.requiresVerification == true)
        let json = try JSONValue(parsing: assertion.json())
        #expect(
            json["clientExtensionResults"]?["prf"]?["results"]?["first"]
                == .string(Self.expectedPRF(stored, input: [1, 2, 3]).base64URLEncodedString))
    }

    /// prf eval at registration goes as CTAP 2.2's hmac-secret-mc (the authenticator lists it) and comes back with
    /// the new credential: the same results a later assertion gives for the same inputs.
    @Test func prfIsEvaluatedAtRegistrationThroughHMACSecretMC() async throws {
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        let created = try await engine.create(
            Self.create(#"{"prf":{"eval":{"first":"AQID","second":"BAU"}}}"#), origin: Site.origin)
        let stored = try #require(try local.store.credential(id: created.id))
        let expected = PRFValues(
            first: Self.expectedPRF(stored, input: [1, 2, 3]), second: Self.expectedPRF(stored, input: [4, 5]))
        #expect(created.clientExtensionResults.prf == PRFOutputs(enabled: true, results: expected))
        let json = try JSONValue(parsing: created.json())
        #expect(
            json["clientExtensionResults"]?["prf"]?["results"]?["second"]
                == .string(expected.second?.base64URLEncodedString ?? ""))

        let assertion = try await engine.get(
            Self.get(#""extensions":{"prf":{"eval":{"first":"AQID","second":"BAU"}}}"#), origin: Site.origin)
        #expect(assertion.clientExtensionResults.prf?.results == expected)
    }

    @Test func prfEvalByCredentialProbesForTheCredentialHeld() async throws {
        // A security key cannot list its credentials, so the client probes the allow list silently first.
        let key = TestAuthenticator(kind: .securityKey, configuration: .securityKey)
        let logged = EditedAuthenticator(base: key.client) { _ in }
        let engine = makeEngine([logged])
        let held = try await engine.create(Self.create(#"{"prf":{}}"#), origin: Site.origin)
        let stored = try #require(try key.store.credential(id: held.id))
        let absent = [UInt8](repeating: 0xEE, count: 16)
        let options = try Self.get(
            #""allowCredentials":[{"type":"public-key","id":"\#(absent.base64URLEncodedString)"},{"type":"public-key","id":"\#(held.id.base64URLEncodedString)"}],"extensions":{"prf":{"eval":{"first":"AA"},"evalByCredential":{"\#(held.id.base64URLEncodedString)":{"first":"Bw"}}}}"#
        )
        let assertion = try await engine.get(options, origin: Site.origin)
        #expect(assertion.clientExtensionResults.prf?.results == PRFValues(first: Self.expectedPRF(stored, input: [7])))
        // makeCredential; then two silent probes, getKeyAgreement and the getAssertion.
        #expect(logged.log.all == [0x01, 0x02, 0x02, 0x06, 0x02])
    }

    @Test func prfWithoutHMACSecretGivesAnEmptyOutput() async throws {
        let phone = TestAuthenticator(kind: .hybrid, configuration: .hybridPhone(oneRequestPerSession: true))
        _ = try await phone.addCredential(userName: "carol")
        let engine = makeEngine([phone.client])
        let assertion = try await engine.get(
            Self.get(#""extensions":{"prf":{"eval":{"first":"AA"}}}"#), origin: Site.origin)
        #expect(assertion.clientExtensionResults.prf == PRFOutputs())
        #expect(
            String(decoding: assertion.clientExtensionResults.jsonValue.serialized(), as: UTF8.self) == #"{"prf":{}}"#)
    }

    static let prfRefusals: [(json: String, reason: ClientError.Reason)] = [
        (
            #""extensions":{"prf":{"evalByCredential":{"AQID":{"first":"AA"}}}}"#,
            .extensionInputRefused("prf evalByCredential needs a non-empty allowCredentials")
        ),
        (
            #""allowCredentials":[{"type":"public-key","id":"AQID"}],"extensions":{"prf":{"evalByCredential":{"AQIE":{"first":"AA"}}}}"#,
            .prfCredentialNotAllowed("AQIE")
        ),
        (
            #""allowCredentials":[{"type":"public-key","id":"AQID"}],"extensions":{"prf":{"evalByCredential":{"":{"first":"AA"}}}}"#,
            .prfCredentialNotAllowed("")
        ),
        (
            #""allowCredentials":[{"type":"public-key","id":"AQID"}],"extensions":{"prf":{"evalByCredential":{"A+/D":{"first":"AA"}}}}"#,
            .prfCredentialNotAllowed("A+/D")
        ),
    ]

    @Test(arguments: prfRefusals)
    func prfInputsARequestRefuses(json: String, reason: ClientError.Reason) async throws {
        let interface = ScriptedInterface()
        let engine = makeEngine([TestAuthenticator().client], interface: interface)
        await #expect(throws: ClientError(reason)) { try await engine.get(Self.get(json), origin: Site.origin) }
        #expect(interface.showedNothing)
    }

    @Test func registrationRefusesAuthenticationOnlyInputs() async throws {
        let engine = makeEngine([TestAuthenticator().client])
        await #expect {
            try await engine.create(
                Self.create(#"{"prf":{"evalByCredential":{"AQID":{"first":"AA"}}}}"#), origin: Site.origin)
        } throws: { ($0 as? ClientError)?.name == .notSupportedError }
        await #expect {
            try await engine.create(Self.create(#"{"largeBlob":{"read":true}}"#), origin: Site.origin)
        } throws: { ($0 as? ClientError)?.name == .notSupportedError }
    }

    @Test func largeBlobSupportNeedsADiscoverableCredential() async throws {
        let engine = makeEngine([TestAuthenticator().client])
        let supported = try await engine.create(
            Self.create(#"{"largeBlob":{"support":"required"}}"#), origin: Site.origin)
        #expect(supported.clientExtensionResults.largeBlobSupported == true)
        let preferred = try await engine.create(
            Self.create(#"{"largeBlob":{"support":"preferred"}}"#, selection: #"{"residentKey":"discouraged"}"#),
            origin: Site.origin)
        #expect(preferred.clientExtensionResults.largeBlobSupported == false)
        await #expect {
            try await engine.create(
                Self.create(#"{"largeBlob":{"support":"required"}}"#, selection: #"{"residentKey":"discouraged"}"#),
                origin: Site.origin)
        } throws: { ($0 as? ClientError)?.name == .notAllowedError }
    }

    @Test func credProtectIsSentAndEnforcementNeedsSupport() async throws {
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        let created = try await engine.create(
            Self.create(#"{"credentialProtectionPolicy":"userVerificationRequired"}"#), origin: Site.origin)
        #expect(try local.store.credential(id: created.id)?.credentialProtection == .userVerificationRequired)
        let authenticatorData = try AuthenticatorData(bytes: created.authenticatorData)
        #expect(authenticatorData.extensions?.mapValue?["credProtect"] == 3)

        let without = EditedAuthenticator(base: TestAuthenticator().client) {
            $0.extensions.removeAll { $0 == "credProtect" }
        }
        let limited = makeEngine([without])
        let unenforced = try await limited.create(
            Self.create(#"{"credentialProtectionPolicy":"userVerificationRequired"}"#), origin: Site.origin)
        #expect(try AuthenticatorData(bytes: unenforced.authenticatorData).extensions == nil)
        await #expect {
            try await limited.create(
                Self.create(
                    #"{"credentialProtectionPolicy":"userVerificationRequired","enforceCredentialProtectionPolicy":true}"#
                ),
                origin: Site.origin)
        } throws: { ($0 as? ClientError)?.name == .notAllowedError }
    }

    @Test func credBlobIsStoredAndReadBack() async throws {
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        let created = try await engine.create(Self.create(#"{"credBlob":"AQIDBA"}"#), origin: Site.origin)
        #expect(created.clientExtensionResults.credentialBlobStored == true)
        let assertion = try await engine.get(Self.get(#""extensions":{"getCredBlob":true}"#), origin: Site.origin)
        #expect(assertion.clientExtensionResults.credentialBlob == [1, 2, 3, 4])
    }

    @Test func minPinLengthIsAskedOfAuthenticatorsThatHaveIt() async throws {
        let store = InMemoryCredentialStore(
            settings: AuthenticatorSettings(minimumPINLength: 6, minimumPINLengthRelyingParties: ["example.com"]))
        let engine = makeEngine([TestAuthenticator(store: store).client])
        let created = try await engine.create(Self.create(#"{"minPinLength":true}"#), origin: Site.origin)
        #expect(try AuthenticatorData(bytes: created.authenticatorData).extensions?.mapValue?["minPinLength"] == 6)
        #expect(created.clientExtensionResults == ClientExtensionOutputs())
    }
}
