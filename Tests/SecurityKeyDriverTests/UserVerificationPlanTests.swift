import CBOR
import CTAP2
import Testing

@testable import SecurityKeyDriver

/// How requests are sent, decided from getInfo alone: no I/O.
struct UserVerificationPlanTests {
    static func info(_ options: [String: Bool]) -> AuthenticatorInfo {
        let map = CBORValue.map(
            Dictionary(uniqueKeysWithValues: options.map { (CBORValue.text($0.key), CBORValue.bool($0.value)) }))
        return try! AuthenticatorInfo(cbor: [
            1: ["FIDO_2_0", "FIDO_2_1"], 3: .bytes([UInt8](repeating: 0, count: 16)), 4: map,
        ])
    }

    static let hash = [UInt8](repeating: 7, count: 32)

    static func makeCredential(rk: Bool, uv: Bool) -> VerifiableRequest {
        VerifiableRequest(
            message: CTAPClient.makeCredentialMessage(
                clientDataHash: hash, relyingPartyID: "example.com", relyingPartyName: nil, userHandle: [1],
                userName: "a", userDisplayName: nil, discoverable: rk, userVerification: uv))!
    }

    static func getAssertion(uv: Bool) -> VerifiableRequest {
        VerifiableRequest(
            message: CTAPClient.getAssertionMessage(
                relyingPartyID: "example.com", clientDataHash: hash, userVerification: uv))!
    }

    // (key options, request, expected plan)
    static let cases: [(String, [String: Bool], VerifiableRequest, UserVerificationPlan)] = [
        ("built-in UV verifies uv itself", ["uv": true, "clientPin": true], makeCredential(rk: true, uv: true), .asIs),
        ("a PIN key verifies uv with a token", ["clientPin": true], makeCredential(rk: false, uv: true), .pinToken),
        ("a PIN key, uv for an assertion", ["clientPin": true], getAssertion(uv: true), .pinToken),
        ("no PIN set yet", ["clientPin": false], getAssertion(uv: true), .impossible(.pinNotSet)),
        ("no PIN at all", [:], getAssertion(uv: true), .impossible(.userVerificationUnavailable)),
        ("no uv, no PIN", ["clientPin": false], makeCredential(rk: true, uv: false), .asIs),
        (
            "a discoverable credential on a PIN key", ["clientPin": true, "makeCredUvNotRqd": true],
            makeCredential(rk: true, uv: false), .pinToken
        ),
        (
            "a server credential where makeCredUvNotRqd", ["clientPin": true, "makeCredUvNotRqd": true],
            makeCredential(rk: false, uv: false), .asIs
        ),
        (
            "a CTAP 2.0 key with a PIN wants it for every makeCredential", ["clientPin": true],
            makeCredential(rk: false, uv: false), .pinToken
        ),
        ("an assertion with presence only", ["clientPin": true], getAssertion(uv: false), .asIs),
        ("alwaysUv", ["clientPin": true, "alwaysUv": true], getAssertion(uv: false), .pinToken),
        (
            "alwaysUv with built-in UV is the key's to do", ["clientPin": true, "alwaysUv": true, "uv": true],
            getAssertion(uv: false), .asIs
        ),
    ]

    @Test(arguments: cases)
    func plansBeforeSending(
        _ name: String, options: [String: Bool], request: VerifiableRequest, plan: UserVerificationPlan
    ) {
        #expect(UserVerificationPlan.before(request, info: Self.info(options)) == plan, "\(name)")
    }

    @Test func requestsItCannotReadOrThatAreSignedGoAsTheyAre() throws {
        #expect(UserVerificationPlan.before(nil, info: Self.info(["clientPin": true])) == .asIs)
        var parameters = try #require(
            try CBORValue(
                decoding: Array(
                    CTAPClient.getAssertionMessage(relyingPartyID: "a", clientDataHash: Self.hash).dropFirst())
            ).mapValue)
        parameters[6] = .bytes([])
        let probe = try #require(VerifiableRequest(message: [0x02] + CBORValue.map(parameters).encoded()))
        #expect(probe.hasPinUvAuthParam)
        #expect(UserVerificationPlan.before(probe, info: Self.info(["clientPin": true])) == .asIs)
        #expect(UserVerificationPlan.afterTokenRequired(probe, info: Self.info(["clientPin": true])) == nil)
        for message: [UInt8] in [
            [], [0x04], [0x06, 0xA0], [0x01], [0x01, 0xA0], [0x02, 0xA1, 0x01, 0x61, 0x61], [0x01, 0xFF],
        ] {
            #expect(VerifiableRequest(message: message) == nil, "\(message)")
        }
    }

    @Test func afterATokenRequiredAnswer() {
        let request = Self.makeCredential(rk: true, uv: false)
        #expect(
            UserVerificationPlan.afterTokenRequired(request, info: Self.info(["clientPin": true, "uv": true]))
                == .pinToken)
        #expect(
            UserVerificationPlan.afterTokenRequired(request, info: Self.info(["clientPin": false, "uv": true]))
                == .builtInUserVerification)
        #expect(UserVerificationPlan.afterTokenRequired(request, info: Self.info(["clientPin": false])) == nil)
        #expect(
            UserVerificationPlan.afterTokenRequired(
                Self.makeCredential(rk: true, uv: true), info: Self.info(["uv": true]))
                == nil)
    }

    @Test func requestsAreReadAndRewrittenKeepingEverythingElse() throws {
        let request = Self.makeCredential(rk: true, uv: false)
        #expect(request.command == .makeCredential)
        #expect(request.relyingPartyID == "example.com" && request.clientDataHash == Self.hash)
        #expect(request.options == ["rk": true] && request.permission == .makeCredential)
        let original = try #require(
            try CBORValue(
                decoding: Array(
                    CTAPClient.makeCredentialMessage(
                        clientDataHash: Self.hash, relyingPartyID: "example.com", relyingPartyName: nil,
                        userHandle: [1],
                        userName: "a", userDisplayName: nil, discoverable: true, userVerification: false
                    ).dropFirst())
            ).mapValue)
        let withUV = request.withBuiltInUserVerification()
        #expect(withUV.first == 0x01)
        var expected = original
        expected[7] = ["rk": true, "uv": true]
        #expect(try CBORValue(decoding: Array(withUV.dropFirst())) == .map(expected))

        let assertion = Self.getAssertion(uv: true)
        #expect(assertion.options == ["uv": true] && assertion.permission == .getAssertion)
        #expect(assertion.relyingPartyID == "example.com")
    }
}
