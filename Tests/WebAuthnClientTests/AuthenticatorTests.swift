import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import JSON
import Testing
import WebAuthn
import WebAuthnClient

/// What the engine does with what an authenticator can and cannot do: PINs, attestation, list limits, getInfo, and
/// the response JSON it builds.
struct AuthenticatorTests {
    /// A security key without built-in verification whose PIN is 1234.
    static func pinKey() -> TestAuthenticator {
        let store = InMemoryCredentialStore(
            settings: AuthenticatorSettings(
                pinHash: Array(SHA256.hash(data: Array("1234".utf8)).prefix(16)), pinCodePointCount: 4))
        return TestAuthenticator(kind: .securityKey, configuration: .pinOnlySecurityKey, store: store)
    }

    @Test func aPINProtectedKeyGetsItsPINAskedAgainAfterAWrongOne() async throws {
        let key = Self.pinKey()
        let interface = ScriptedInterface(pins: ["0000", "1234", "1234"])
        let engine = makeEngine([key.client], interface: interface)
        let created = try await engine.create(
            PublicKeyCredentialCreationOptions(
                json: creationOptionsJSON(#""authenticatorSelection":{"residentKey":"required"}"#)),
            origin: Site.origin)
        #expect(try AuthenticatorData(bytes: created.authenticatorData).flags.contains(.userVerified))
        #expect(
            interface.pinRequests == [
                PINRequest(relyingPartyID: "example.com", retriesLeft: 8),
                PINRequest(relyingPartyID: "example.com", retriesLeft: 7, previousAttemptWasWrong: true),
            ])
        let assertion = try await engine.get(
            PublicKeyCredentialRequestOptions(json: requestOptionsJSON()), origin: Site.origin)
        #expect(assertion.id == created.id)
        #expect(try AuthenticatorData(bytes: assertion.authenticatorData).flags.contains(.userVerified))
        #expect(interface.pinRequests.count == 3)
        #expect(interface.pinRequests[2] == PINRequest(relyingPartyID: "example.com", retriesLeft: 8))
    }

    @Test func cancellingThePINPromptIsNotAllowedErrorAndStoresNothing() async throws {
        let key = Self.pinKey()
        let engine = makeEngine([key.client], interface: ScriptedInterface(pins: []))
        await #expect(throws: ClientError(.userCancelled)) {
            try await engine.create(
                PublicKeyCredentialCreationOptions(json: creationOptionsJSON()), origin: Site.origin)
        }
        #expect(try key.store.allCredentials().isEmpty)
    }

    /// A CTAP 2.0 key knows no permissions: its token comes from getPinToken, which takes neither permissions nor an
    /// RP ID.
    @Test func aKeyWithoutPermissionTokensGetsItsTokenWithGetPinToken() async throws {
        let key = Self.pinKey()
        let legacy = EditedAuthenticator(base: key.client) { $0.options["pinUvAuthToken"] = nil }
        let interface = ScriptedInterface(pins: ["1234"])
        let created = try await makeEngine([legacy], interface: interface).create(
            PublicKeyCredentialCreationOptions(
                json: creationOptionsJSON(#""authenticatorSelection":{"residentKey":"required"}"#)),
            origin: Site.origin)
        #expect(try AuthenticatorData(bytes: created.authenticatorData).flags.contains(.userVerified))
        #expect(interface.pinRequests == [PINRequest(relyingPartyID: "example.com", retriesLeft: 8)])
        #expect(
            try tokenRequests(legacy.answers) == [TokenRequest(subCommand: 0x05, permissions: nil, relyingPartyID: nil)]
        )
    }

    @Test func attestationNoneStripsPackedAttestation() async throws {
        let key = TestAuthenticator(kind: .securityKey, configuration: .securityKey)
        let interface = ScriptedInterface()
        let engine = makeEngine([key.client], interface: interface)
        let created = try await engine.create(
            PublicKeyCredentialCreationOptions(json: creationOptionsJSON()), origin: Site.origin)
        let object = try AttestationObject(bytes: created.attestationObject)
        #expect(object.format == "none")
        #expect(object.statement == .map([:]))
        #expect(object.authenticatorData.bytes == created.authenticatorData)
        #expect(interface.questions.isEmpty)
    }

    @Test(arguments: [true, false])
    func directAttestationFromAKeyIsConveyedOnlyWithConsent(allowed: Bool) async throws {
        let key = TestAuthenticator(kind: .securityKey, configuration: .securityKey)
        let interface = ScriptedInterface(answer: allowed)
        let engine = makeEngine([key.client], interface: interface)
        let created = try await engine.create(
            PublicKeyCredentialCreationOptions(json: creationOptionsJSON(#""attestation":"direct""#)),
            origin: Site.origin)
        #expect(interface.questions == [.revealSecurityKeyModel(relyingPartyID: "example.com")])
        #expect(try AttestationObject(bytes: created.attestationObject).format == (allowed ? "packed" : "none"))
    }

    @Test func longExcludeListsAreProbedInBatchesAndAHitIsInvalidStateError() async throws {
        let key = TestAuthenticator(kind: .securityKey, configuration: .securityKey)
        let existing = try await key.addCredential(userName: "alice")
        let limited = EditedAuthenticator(base: key.client) { $0.maximumCredentialCountInList = 2 }
        let engine = makeEngine([limited])
        let others = (1...4).map { [UInt8](repeating: UInt8($0), count: 16) }
        let descriptors = (others + [existing]).map { #"{"type":"public-key","id":"\#($0.base64URLEncodedString)"}"# }
        let options = try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(#""excludeCredentials":[\#(descriptors.joined(separator: ","))]"#))
        await #expect(throws: ClientError(.authenticator(.credentialExcluded))) {
            try await engine.create(options, origin: Site.origin)
        }
        // Three silent probes (2 + 2 + 1 descriptors), the last finding it; then makeCredential with that one.
        #expect(limited.log.all == [0x02, 0x02, 0x02, 0x01])
    }

    @Test func aPhoneIsNeverProbedSinceItAnswersOneRequest() async throws {
        let phone = TestAuthenticator(kind: .hybrid, configuration: .hybridPhone(oneRequestPerSession: true))
        let held = try await phone.addCredential(userName: "carol")
        let limited = EditedAuthenticator(base: phone.client) { $0.maximumCredentialCountInList = nil }
        let engine = makeEngine([limited])
        let ids = [[UInt8](repeating: 9, count: 16), held].map {
            #"{"type":"public-key","id":"\#($0.base64URLEncodedString)"}"#
        }
        let assertion = try await engine.get(
            PublicKeyCredentialRequestOptions(
                json: requestOptionsJSON(#""allowCredentials":[\#(ids.joined(separator: ","))]"#)),
            origin: Site.origin)
        #expect(assertion.id == held)
        #expect(limited.log.all == [0x02])
    }

    @Test func anAuthenticatorWithoutDiscoverableCredentialsCannotTakeARequiredOne() async throws {
        let key = EditedAuthenticator(base: TestAuthenticator(kind: .securityKey).client) { $0.options["rk"] = false }
        let engine = makeEngine([key])
        let options = try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(#""authenticatorSelection":{"residentKey":"required"}"#))
        await #expect {
            try await engine.create(options, origin: Site.origin)
        } throws: { ($0 as? ClientError)?.name == .notAllowedError }
        // Preferred makes a server-side credential there instead.
        let preferred = try await engine.create(
            PublicKeyCredentialCreationOptions(
                json: creationOptionsJSON(
                    #""authenticatorSelection":{"residentKey":"preferred"},"extensions":{"credProps":true}"#)),
            origin: Site.origin)
        #expect(preferred.clientExtensionResults.credentialProperties == false)
        #expect(key.log.all == [0x01])
    }

    @Test func anAuthenticatorWithoutES256IsNotSupportedError() async throws {
        let key = EditedAuthenticator(base: TestAuthenticator(kind: .securityKey).client) { $0.algorithms = [-8] }
        let engine = makeEngine([key])
        await #expect(throws: ClientError(.authenticator(.unsupportedAlgorithm))) {
            try await engine.create(
                PublicKeyCredentialCreationOptions(json: creationOptionsJSON()), origin: Site.origin)
        }
        #expect(ClientError(.authenticator(.unsupportedAlgorithm)).name == .notSupportedError)
        #expect(key.log.all.isEmpty)
    }

    @Test func getInfoIsRead() async throws {
        let local = TestAuthenticator()
        let info = try AuthenticatorInfo(ctapResponse: [0] + (try await local.authenticator.info()).encoded())
        #expect(info.versions.contains("FIDO_2_1"))
        #expect(info.supportsDiscoverableCredentials && info.hasBuiltInUserVerification && !info.hasPIN)
        #expect(info.pinUvAuthProtocols == [.two, .one])
        #expect(info.preferredPinUvAuthProtocol == .two)
        #expect(info.algorithms == [-7, -8, -9, -19])
        #expect(info.maximumCredentialCountInList == 16)
        #expect(info.supports(extension: "hmac-secret"))
        #expect(throws: CTAPError.invalidCommand) { try AuthenticatorInfo(ctapResponse: [0x01]) }
        #expect(throws: CTAPError.missingParameter) {
            try AuthenticatorInfo(cbor: [3: .bytes([UInt8](repeating: 0, count: 16))])
        }
    }

    @Test func registrationJSONHasTheIDLMembersInOrder() async throws {
        let local = TestAuthenticator()
        let engine = makeEngine([local.client])
        let created = try await engine.create(
            PublicKeyCredentialCreationOptions(json: creationOptionsJSON(#""extensions":{"credProps":true}"#)),
            origin: Site.origin)
        guard case .object(let members) = try JSONValue(parsing: created.json()) else {
            Issue.record("not an object")
            return
        }
        #expect(
            members.map(\.key) == [
                "id", "rawId", "response", "authenticatorAttachment", "clientExtensionResults", "type",
            ])
        let response = members[2].value
        guard case .object(let responseMembers) = response else {
            Issue.record("response is not an object")
            return
        }
        #expect(
            responseMembers.map(\.key) == [
                "clientDataJSON", "authenticatorData", "transports", "publicKey", "publicKeyAlgorithm",
                "attestationObject",
            ])
        #expect(members[0].value == .string(created.id.base64URLEncodedString))
        #expect(members[5].value == .string("public-key"))
        #expect(response["transports"] == .array([.string("internal")]))
        #expect(response["publicKeyAlgorithm"] == .number(-7))
        // The SubjectPublicKeyInfo is the COSE key of the authenticator data.
        let key = try P256.Signing.PublicKey(derRepresentation: try #require(created.publicKey))
        let attested = try #require(try AuthenticatorData(bytes: created.authenticatorData).attestedCredentialData)
        #expect(COSEKey(publicKey: key) == attested.publicKey)
        // clientDataJSON as a browser serializes it.
        #expect(
            String(decoding: created.clientDataJSON, as: UTF8.self)
                == #"{"type":"webauthn.create","challenge":"AAECAwQFBgcICQoLDA0ODw","origin":"https://example.com","crossOrigin":false}"#
        )
        #expect(!created.json().contains(UInt8(ascii: " ")))
    }

    @Test func authenticationJSONHasTheIDLMembersInOrder() async throws {
        let local = TestAuthenticator()
        _ = try await local.addCredential(userName: "alice")
        let engine = makeEngine([local.client])
        let assertion = try await engine.get(
            PublicKeyCredentialRequestOptions(json: requestOptionsJSON()), origin: Site.origin)
        let json = try JSONValue(parsing: assertion.json(.pretty))
        guard case .object(let members) = json, case .object(let response)? = json["response"] else {
            Issue.record("not an object")
            return
        }
        #expect(
            members.map(\.key) == [
                "id", "rawId", "response", "authenticatorAttachment", "clientExtensionResults", "type",
            ])
        #expect(response.map(\.key) == ["clientDataJSON", "authenticatorData", "signature", "userHandle"])
        #expect(json["authenticatorAttachment"] == .string("platform"))
        #expect(json["clientExtensionResults"] == .object([]))
        #expect(
            String(decoding: assertion.clientDataJSON, as: UTF8.self)
                == #"{"type":"webauthn.get","challenge":"AAECAwQFBgcICQoLDA0ODw","origin":"https://example.com","crossOrigin":false}"#
        )
    }
}
