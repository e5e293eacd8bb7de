import CBOR
import CTAP2
import Crypto
import Testing
import WebAuthn

struct ClientSideTests {
    @Test func registerAndSignInThroughTheClientHelpers() async throws {
        let harness = Harness()
        let registration = try MakeCredentialResponse(
            ctapResponse: await harness.authenticator.handle(
                CTAPClient.makeCredentialMessage(
                    clientDataHash: Fixtures.clientDataHash, relyingPartyID: "example.com", relyingPartyName: "Example",
                    userHandle: [7], userName: "alice", userDisplayName: "Alice")))
        let attestation = try AttestationObject(bytes: registration.attestationObject.bytes)
        #expect(attestation.format == "none")
        let key = try #require(attestation.authenticatorData.attestedCredentialData).publicKey

        let assertion = try GetAssertionResponse(
            ctapResponse: await harness.authenticator.handle(
                CTAPClient.getAssertionMessage(relyingPartyID: "example.com", clientDataHash: Fixtures.clientDataHash)))
        #expect(assertion.credentialID == registration.credentialID)
        #expect(assertion.userHandle == [7])
        #expect(assertion.userName == "alice")
        let signature = try P256.Signing.ECDSASignature(derRepresentation: assertion.signature)
        #expect(
            try key.signingKey().isValidSignature(signature, for: assertion.authenticatorData + Fixtures.clientDataHash)
        )
    }

    @Test func errorStatusesAreThrown() async throws {
        let harness = Harness()
        #expect(throws: CTAPError.noCredentials) {
            try GetAssertionResponse(ctapResponse: [0x2E])
        }
        #expect(throws: CTAPError.invalidCBOR) {
            try GetAssertionResponse(ctapResponse: [0x00, 0xA1])
        }
        let response = await harness.authenticator.handle(
            CTAPClient.getAssertionMessage(relyingPartyID: "example.com", clientDataHash: Fixtures.clientDataHash))
        #expect(throws: CTAPError.noCredentials) { try GetAssertionResponse(ctapResponse: response) }
    }

    @Test func writtenRequestsParseToTheSameRequest() throws {
        let made = MakeCredentialRequest(
            clientDataHash: Fixtures.clientDataHash, relyingPartyID: "example.com", relyingPartyName: "Example",
            userHandle: [1, 2], userName: "alice", userDisplayName: nil, algorithms: [-7, -257],
            excludeList: [CredentialDescriptor(id: [9, 9])], extensions: ["credProtect": 2],
            options: ["rk": true, "uv": false], pinUvAuthParam: [5], pinUvAuthProtocol: 2)
        #expect(made.message.first == CTAPCommand.makeCredential.rawValue)
        let parsed = try MakeCredentialRequest(cbor: CBORValue(decoding: Array(made.message.dropFirst())))
        #expect(parsed.clientDataHash == made.clientDataHash && parsed.relyingPartyName == "Example")
        #expect(parsed.userHandle == [1, 2] && parsed.userName == "alice" && parsed.userDisplayName == nil)
        #expect(parsed.algorithms == [-7, -257] && parsed.excludeList == [CredentialDescriptor(id: [9, 9])])
        #expect(parsed.extensions == ["credProtect": 2] && parsed.options == ["rk": true, "uv": false])
        #expect(parsed.pinUvAuthParam == [5] && parsed.pinUvAuthProtocol == 2 && parsed.enterpriseAttestation == nil)

        let assertion = GetAssertionRequest(
            relyingPartyID: "example.com", clientDataHash: Fixtures.clientDataHash,
            allowList: [CredentialDescriptor(id: [3])], options: ["up": false])
        #expect(assertion.message.first == CTAPCommand.getAssertion.rawValue)
        let read = try GetAssertionRequest(cbor: CBORValue(decoding: Array(assertion.message.dropFirst())))
        #expect(read.allowList == [CredentialDescriptor(id: [3])] && read.options == ["up": false])
        #expect(read.extensions == nil && read.pinUvAuthParam == nil)
        // The message is what the older builder writes for the same request.
        #expect(
            GetAssertionRequest(
                relyingPartyID: "example.com", clientDataHash: Fixtures.clientDataHash, options: ["uv": true]
            )
            .message
                == CTAPClient.getAssertionMessage(
                    relyingPartyID: "example.com", clientDataHash: Fixtures.clientDataHash))
    }

    @Test func aCredentialLeftOutBesideOneAllowedIsThatOne() throws {
        let response = [0x00] + CBORValue.map([2: .bytes([UInt8](repeating: 0, count: 37)), 3: .bytes([1])]).encoded()
        #expect(throws: CTAPError.missingParameter) { try GetAssertionResponse(ctapResponse: response) }
        #expect(try GetAssertionResponse(ctapResponse: response, defaultCredentialID: [4]).credentialID == [4])
    }
}
