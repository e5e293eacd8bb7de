import Basics
import CBOR
import CTAP2
import Testing
import WebAuthn
import WebAuthnClient

/// The engine's own checks of what an authenticator answers (WebAuthn L3 §5.1.3 step 22 and §5.1.4.1's success
/// steps, as `PendingRegistration.run` and `PendingAssertion.credential` make them), and the PIN asked for after
/// CTAP2_ERR_PUAT_REQUIRED. This package's authenticator never gives such answers, so an `EditedAuthenticator`
/// changes or replaces them on the way back.
struct ResponseCheckTests {
    /// A security key with built-in verification and one discoverable credential for alice.
    static func keyWithAlice() async throws -> (EditedAuthenticator, credentialID: [UInt8]) {
        let key = TestAuthenticator(kind: .securityKey, configuration: .securityKey)
        let id = try await key.addCredential(userName: "alice")
        return (EditedAuthenticator(base: key.client) { _ in }, id)
    }

    static func refusal(_ reason: String) -> ClientError { ClientError(.invalidResponse(reason)) }

    // MARK: Registration

    @Test func aRegistrationForAnotherRPIDIsRefused() async throws {
        let key = EditedAuthenticator(base: TestAuthenticator(kind: .securityKey).client) { _ in }
        key.answers.rewrite(.makeCredential) { editingAuthenticatorData($0) { $0[0] ^= 1 } }
        await #expect(throws: Self.refusal("the authenticator data is for another RP ID")) {
            try await makeEngine([key]).create(
                PublicKeyCredentialCreationOptions(json: creationOptionsJSON()), origin: Site.origin)
        }
        #expect(Self.refusal("").name == .notAllowedError)  // what the page sees for every refusal here
    }

    @Test func aRegistrationWithoutUserPresenceIsRefused() async throws {
        let key = EditedAuthenticator(base: TestAuthenticator(kind: .securityKey).client) { _ in }
        key.answers.rewrite(.makeCredential) {
            editingAuthenticatorData($0) { $0[32] &= ~AuthenticatorFlags.userPresent.rawValue }
        }
        await #expect(throws: Self.refusal("the UP flag is not set")) {
            try await makeEngine([key]).create(
                PublicKeyCredentialCreationOptions(json: creationOptionsJSON()), origin: Site.origin)
        }
    }

    @Test func aRegistrationWithoutACredentialIsRefused() async throws {
        let key = EditedAuthenticator(base: TestAuthenticator(kind: .securityKey).client) { _ in }
        // The RP ID hash, the flags without AT and ED, and the counter: authenticator data that names no credential.
        key.answers.rewrite(.makeCredential) {
            editingAuthenticatorData($0) { data in
                data = Array(data.prefix(37))
                data[32] &= ~(AuthenticatorFlags.attestedCredentialData.union(.extensionData)).rawValue
            }
        }
        await #expect(throws: Self.refusal("the authenticator data has no attested credential data")) {
            try await makeEngine([key]).create(
                PublicKeyCredentialCreationOptions(json: creationOptionsJSON()), origin: Site.origin)
        }
    }

    /// Without UV the answer is refused when the relying party required verification, and taken when it preferred it.
    @Test(arguments: ["required", "preferred"])
    func aRegistrationWithoutVerificationIsRefusedOnlyWhenItWasRequired(requirement: String) async throws {
        let key = EditedAuthenticator(base: TestAuthenticator(kind: .securityKey).client) { _ in }
        key.answers.rewrite(.makeCredential) {
            editingAuthenticatorData($0) { $0[32] &= ~AuthenticatorFlags.userVerified.rawValue }
        }
        let options = try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(#""authenticatorSelection":{"userVerification":"\#(requirement)"}"#))
        let creating = { () async throws in try await makeEngine([key]).create(options, origin: Site.origin) }
        if requirement == "required" {
            await #expect(throws: Self.refusal("the user verification the relying party requires did not happen")) {
                try await creating()
            }
        } else {
            let created = try await creating()
            #expect(try !AuthenticatorData(bytes: created.authenticatorData).flags.contains(.userVerified))
        }
        // The key was asked for verification both times: only the answer lacks it.
        let request = try #require(key.answers.sent(.makeCredential).first)
        #expect(try requestOptions(of: request)["uv"] == true)
    }

    // MARK: Authentication

    @Test func anAssertionForAnotherRPIDIsRefused() async throws {
        let (key, _) = try await Self.keyWithAlice()
        key.answers.rewrite(.getAssertion) { editingAuthenticatorData($0) { $0[31] ^= 0x80 } }
        await #expect(throws: Self.refusal("the authenticator data is for another RP ID")) {
            try await makeEngine([key]).get(
                PublicKeyCredentialRequestOptions(json: requestOptionsJSON()), origin: Site.origin)
        }
    }

    @Test func anAssertionWithoutUserPresenceIsRefused() async throws {
        let (key, _) = try await Self.keyWithAlice()
        key.answers.rewrite(.getAssertion) {
            editingAuthenticatorData($0) { $0[32] &= ~AuthenticatorFlags.userPresent.rawValue }
        }
        await #expect(throws: Self.refusal("the UP flag is not set")) {
            try await makeEngine([key]).get(
                PublicKeyCredentialRequestOptions(json: requestOptionsJSON()), origin: Site.origin)
        }
    }

    /// Without UV the answer is refused when the relying party required verification, and taken when it preferred it.
    @Test(arguments: ["required", "preferred"])
    func anAssertionWithoutVerificationIsRefusedOnlyWhenItWasRequired(requirement: String) async throws {
        let (key, id) = try await Self.keyWithAlice()
        key.answers.rewrite(.getAssertion) {
            editingAuthenticatorData($0) { $0[32] &= ~AuthenticatorFlags.userVerified.rawValue }
        }
        let options = try PublicKeyCredentialRequestOptions(
            json: requestOptionsJSON(#""userVerification":"\#(requirement)""#))
        let getting = { () async throws in try await makeEngine([key]).get(options, origin: Site.origin) }
        if requirement == "required" {
            await #expect(throws: Self.refusal("the user verification the relying party requires did not happen")) {
                try await getting()
            }
        } else {
            let assertion = try await getting()
            #expect(assertion.id == id)
            #expect(try !AuthenticatorData(bytes: assertion.authenticatorData).flags.contains(.userVerified))
        }
        let request = try #require(key.answers.sent(.getAssertion).first)
        #expect(try requestOptions(of: request)["uv"] == true)
    }

    /// A request without an allow list learns the account only from the user handle, so an answer without one is
    /// refused; with an allow list the credential ID says whose it is, and the answer is taken.
    @Test(arguments: [false, true])
    func anAnswerWithoutAUserHandleIsRefusedOnlyForADiscoverableRequest(withAllowList: Bool) async throws {
        let (key, id) = try await Self.keyWithAlice()
        key.answers.rewrite(.getAssertion) { editingMap($0) { $0[4] = nil } }
        let allowList = #""allowCredentials":[{"type":"public-key","id":"\#(id.base64URLEncodedString)"}]"#
        let options = try PublicKeyCredentialRequestOptions(json: requestOptionsJSON(withAllowList ? allowList : ""))
        let getting = { () async throws in try await makeEngine([key]).get(options, origin: Site.origin) }
        if withAllowList {
            let assertion = try await getting()
            #expect(assertion.id == id)
            #expect(assertion.userHandle == nil)
        } else {
            await #expect(throws: Self.refusal("a discoverable credential came without its user handle")) {
                try await getting()
            }
        }
        // The request carried an allow list (member 3) exactly when the relying party gave one.
        let request = try #require(key.answers.sent(.getAssertion).first)
        #expect((try requestMap(request)[3] != nil) == withAllowList)
    }

    @Test func anAssertionOfACredentialTheRequestDidNotAllowIsRefused() async throws {
        let (key, id) = try await Self.keyWithAlice()
        let other = [UInt8](repeating: 0xEE, count: 16)
        key.answers.rewrite(.getAssertion) {
            editingMap($0) { $0[1] = .map(["id": .bytes(other), "type": "public-key"]) }
        }
        let options = try PublicKeyCredentialRequestOptions(
            json: requestOptionsJSON(
                #""allowCredentials":[{"type":"public-key","id":"\#(id.base64URLEncodedString)"}]"#))
        await #expect(throws: Self.refusal("the credential is not one the request allowed")) {
            try await makeEngine([key]).get(options, origin: Site.origin)
        }
    }

    // MARK: CTAP2_ERR_PUAT_REQUIRED

    /// The PIN key of `AuthenticatorTests` with `makeCredUvNotRqd` in its getInfo: a request that neither asks for
    /// verification nor makes a discoverable credential goes without a token, and the key may then want one.
    static func pinKeyWithoutPromisedVerification() -> (TestAuthenticator, EditedAuthenticator) {
        let key = AuthenticatorTests.pinKey()
        return (key, EditedAuthenticator(base: key.client) { $0.options["makeCredUvNotRqd"] = true })
    }

    static let withoutVerification =
        #""authenticatorSelection":{"residentKey":"discouraged","userVerification":"discouraged"}"#

    @Test func puatRequiredToARegistrationAsksForThePINAndSendsTheRequestAgainWithAToken() async throws {
        let (pinKey, key) = Self.pinKeyWithoutPromisedVerification()
        key.answers.answerNext(.makeCredential, with: [CTAPError.pinUvAuthTokenRequired.rawValue])
        let interface = ScriptedInterface(pins: ["1234"])
        let created = try await makeEngine([key], interface: interface).create(
            PublicKeyCredentialCreationOptions(json: creationOptionsJSON(Self.withoutVerification)), origin: Site.origin
        )
        #expect(interface.pinRequests == [PINRequest(relyingPartyID: "example.com", retriesLeft: 8)])
        let requests = try key.answers.sent(.makeCredential).map(requestMap)
        try #require(requests.count == 2)
        // makeCredential's pinUvAuthParam is member 8, its protocol member 9.
        #expect(requests[0][8] == nil && requests[0][9] == nil)
        #expect(requests[1][8]?.bytesValue?.isEmpty == false && requests[1][9] != nil)
        #expect(
            try tokenRequests(key.answers) == [
                TokenRequest(subCommand: 0x09, permissions: PinUvAuthPermissions.makeCredential.rawValue)
            ])
        #expect(try AuthenticatorData(bytes: created.authenticatorData).flags.contains(.userVerified))
        #expect(try pinKey.store.allCredentials().map(\.id) == [created.id])
    }

    @Test func puatRequiredToAnAssertionAsksForThePINAndSendsTheRequestAgainWithAToken() async throws {
        let (pinKey, key) = Self.pinKeyWithoutPromisedVerification()
        let id = try await pinKey.addCredential(userName: "alice")
        key.answers.answerNext(.getAssertion, with: [CTAPError.pinUvAuthTokenRequired.rawValue])
        let interface = ScriptedInterface(pins: ["1234"])
        let assertion = try await makeEngine([key], interface: interface).get(
            PublicKeyCredentialRequestOptions(json: requestOptionsJSON(#""userVerification":"discouraged""#)),
            origin: Site.origin)
        #expect(assertion.id == id)
        #expect(interface.pinRequests == [PINRequest(relyingPartyID: "example.com", retriesLeft: 8)])
        let requests = try key.answers.sent(.getAssertion).map(requestMap)
        try #require(requests.count == 2)
        // getAssertion's pinUvAuthParam is member 6, its protocol member 7.
        #expect(requests[0][6] == nil && requests[0][7] == nil)
        #expect(requests[1][6]?.bytesValue?.isEmpty == false && requests[1][7] != nil)
        #expect(
            try tokenRequests(key.answers) == [
                TokenRequest(subCommand: 0x09, permissions: PinUvAuthPermissions.getAssertion.rawValue)
            ])
        #expect(try AuthenticatorData(bytes: assertion.authenticatorData).flags.contains(.userVerified))
    }

    /// The PIN is asked for once: PUAT_REQUIRED to the request that carried a token ends the ceremony.
    @Test func puatRequiredAgainAfterThePINEndsTheCeremony() async throws {
        let (_, key) = Self.pinKeyWithoutPromisedVerification()
        key.answers.answerNext(.makeCredential, with: [CTAPError.pinUvAuthTokenRequired.rawValue])
        key.answers.answerNext(.makeCredential, with: [CTAPError.pinUvAuthTokenRequired.rawValue])
        let interface = ScriptedInterface(pins: ["1234", "1234"])
        await #expect(throws: ClientError(.authenticator(.pinUvAuthTokenRequired))) {
            try await makeEngine([key], interface: interface).create(
                PublicKeyCredentialCreationOptions(json: creationOptionsJSON(Self.withoutVerification)),
                origin: Site.origin)
        }
        #expect(interface.pinRequests.count == 1)
        #expect(key.answers.sent(.makeCredential).count == 2)
    }

    /// A key without a PIN cannot be given a token: its PUAT_REQUIRED ends the ceremony without a prompt.
    @Test func puatRequiredFromAKeyWithoutAPINEndsTheCeremonyWithoutAPrompt() async throws {
        let key = EditedAuthenticator(base: TestAuthenticator(kind: .securityKey).client) {
            $0.options["makeCredUvNotRqd"] = true
        }
        key.answers.answerNext(.makeCredential, with: [CTAPError.pinUvAuthTokenRequired.rawValue])
        let interface = ScriptedInterface(pins: ["1234"])
        await #expect(throws: ClientError(.authenticator(.pinUvAuthTokenRequired))) {
            try await makeEngine([key], interface: interface).create(
                PublicKeyCredentialCreationOptions(json: creationOptionsJSON(Self.withoutVerification)),
                origin: Site.origin)
        }
        #expect(interface.pinRequests.isEmpty)
        #expect(key.answers.sent(.makeCredential).count == 1)
    }
}

/// A CTAP2 success answer (status 0, then a CBOR map) with its map changed by `edit`.
func editingMap(_ response: [UInt8], _ edit: (inout [CBORValue: CBORValue]) -> Void) -> [UInt8] {
    guard response.first == 0, var map = try? CBORValue(decoding: Array(response.dropFirst())).mapValue else {
        Issue.record("not a CTAP2 success answer with a map: \(response)")
        return response
    }
    edit(&map)
    return [0] + CBORValue.map(map).encoded()
}

/// A makeCredential or getAssertion answer with its authenticator data (member 2 of both) changed by `edit`.
func editingAuthenticatorData(_ response: [UInt8], _ edit: (inout [UInt8]) -> Void) -> [UInt8] {
    editingMap(response) { map in
        guard var data = map[2]?.bytesValue, data.count >= 37 else {
            Issue.record("no authenticator data in \(map)")
            return
        }
        edit(&data)
        map[2] = .bytes(data)
    }
}

/// The CBOR map of a request message (its command byte dropped).
func requestMap(_ message: [UInt8]) throws -> [CBORValue: CBORValue] {
    try #require(try CBORValue(decoding: Array(message.dropFirst())).mapValue)
}

/// A PIN token request as the key received it: getPinUvAuthTokenUsingPinWithPermissions (0x09) with its permissions
/// and RP ID, or CTAP 2.0's getPinToken (0x05) with neither.
struct TokenRequest: Equatable {
    var subCommand: Int?
    var permissions: Int?
    var relyingPartyID: String? = "example.com"
}

/// The token requests among the clientPIN messages `answers` saw (subcommand 2 of the request, permissions 9, RP ID
/// 10).
func tokenRequests(_ answers: ScriptedAnswers) throws -> [TokenRequest] {
    try answers.sent(.clientPIN).map(requestMap).filter { [0x05, 0x09].contains($0[2]?.intValue) }.map { request in
        TokenRequest(
            subCommand: request[2]?.intValue, permissions: request[9]?.intValue,
            relyingPartyID: request[10]?.textValue)
    }
}

/// The options of a makeCredential (member 7) or getAssertion (member 5) request.
func requestOptions(of message: [UInt8]) throws -> [String: Bool] {
    let map = try requestMap(message)
    let member: CBORValue = message.first == CTAPCommand.makeCredential.rawValue ? 7 : 5
    var options: [String: Bool] = [:]
    for (key, value) in map[member]?.mapValue ?? [:] {
        if let name = key.textValue, let flag = value.boolValue { options[name] = flag }
    }
    return options
}
