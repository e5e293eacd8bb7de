import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import TestSupport
import Testing
import WebAuthn

struct ClientPINTests {
    static let protocols: [PinUvAuthProtocol] = [.one, .two]

    @Test(arguments: protocols) func setPINThenTokenThenRetries(pinProtocol: PinUvAuthProtocol) async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness, pinProtocol: pinProtocol)
        #expect(try await platform.retries() == (8, false))
        #expect(try await platform.setPIN("1234") == 0)
        #expect(try await harness.send(.getInfo).body?[4]?["clientPin"] == true)
        let settings = try harness.store.settings()
        #expect(settings.pinHash == PlatformDouble.pinHash("1234"))
        #expect(settings.pinCodePointCount == 4 && settings.pinRetries == 8)
        #expect(!"\(settings)".contains(PlatformDouble.pinHash("1234").hexString))

        let (status, token) = try await platform.pinToken("1234", rpID: "example.com")
        #expect(status == 0)
        #expect(token?.count == 32)
        #expect(try await platform.setPIN("5678") == 0x30)  // already set: CTAP2_ERR_NOT_ALLOWED
    }

    @Test(
        arguments: [
            ("123", nil, 0x37),  // shorter than 4 code points
            ("ü¢€", nil, 0x37),  // 3 code points, 7 bytes
            ("üüüü", nil, 0),  // 4 code points
            (String(repeating: "9", count: 63), nil, 0),
            (String(repeating: "9", count: 64), [UInt8](repeating: 0x39, count: 64), 0x37),  // no terminating zero
            ("", [0x31, 0x32, 0x00, 0x33, 0x34] + [UInt8](repeating: 0, count: 59), 0x37),  // zero inside the PIN
            ("", [0xFF, 0xFE, 0xFD, 0xFC] + [UInt8](repeating: 0, count: 60), 0x37),  // not UTF-8
            ("", [UInt8](repeating: 0x31, count: 8) + [UInt8](repeating: 0, count: 24), 0x02),  // 32-byte block
        ] as [(String, [UInt8]?, Int)])
    func newPINPolicy(pin: String, block: [UInt8]?, expected: Int) async throws {
        let harness = Harness()
        let status = try await PlatformDouble(harness: harness).setPIN(pin, block: block)
        #expect(status == UInt8(expected))
        #expect(try harness.store.settings().isPINSet == (expected == 0))
    }

    @Test func malformedRequestsChangeNothing() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        let (keyAgreement, shared) = try await platform.encapsulate()
        let newPinEnc = try platform.encrypt(shared, PlatformDouble.padded("1234"))
        let param = PinUvAuthProtocol.two.authenticate(key: shared, message: newPinEnc)
        let notAPoint: CBORValue = [
            1: 2, 3: -25, -1: 1, -2: .bytes([UInt8](repeating: 1, count: 32)),
            -3: .bytes([UInt8](repeating: 1, count: 32)),
        ]
        let cases: [(CBORValue, UInt8)] = [
            ([1: 2, 2: 3, 3: keyAgreement, 4: .bytes(param)], 0x14),  // no newPinEnc
            ([1: 2, 3: keyAgreement], 0x14),  // no subcommand
            ([1: 2, 2: 0x08], 0x3E),  // unknown subcommand
            ([1: 2, 2: "three"], 0x11),
            ([1: 3, 2: 3, 3: keyAgreement, 4: .bytes(param), 5: .bytes(newPinEnc)], 0x02),  // protocol 3
            ([1: 1, 2: 3, 3: keyAgreement, 4: .bytes(param), 5: .bytes(newPinEnc)], 0x33),  // protocol mismatch
            ([1: 2, 2: 3, 3: notAPoint, 4: .bytes(param), 5: .bytes(newPinEnc)], 0x02),
            ([1: 2, 2: 3, 3: "key", 4: .bytes(param), 5: .bytes(newPinEnc)], 0x11),
            ([1: 2, 2: 3, 3: keyAgreement, 4: .bytes(param.reversed()), 5: .bytes(newPinEnc)], 0x33),
            ([1: 2, 2: 3, 3: keyAgreement, 4: .bytes(param), 5: .bytes(newPinEnc + [0])], 0x33),
            ([1: 3, 2: 2], 0x02),
            ([2: 2], 0x14),
            ([1: 2, 2: 5, 3: keyAgreement], 0x14),
            ("not a map", 0x11),
        ]
        for (request, expected) in cases {
            #expect(try await harness.send(.clientPIN, request).status == expected, "\(request)")
        }
        #expect(await harness.sendRaw([0x06, 0xA1, 0x01]) == [0x12])  // truncated CBOR
        #expect(await harness.sendRaw([0x06]) == [0x14])
        #expect(try harness.store.settings() == AuthenticatorSettings())
    }

    @Test func wrongPINsBlockUntilPowerCycleThenForGood() async throws {
        let store = InMemoryCredentialStore()
        var harness = Harness(store: store)
        var platform = PlatformDouble(harness: harness)
        #expect(try await platform.setPIN("1234") == 0)

        var statuses: [UInt8] = []
        for _ in 0..<4 { statuses.append(try await platform.pinToken("0000").status) }
        #expect(statuses == [0x31, 0x31, 0x34, 0x34])
        #expect(try await platform.pinToken("1234").status == 0x34)  // even the right PIN waits for a restart
        #expect(try await platform.retries() == (5, true))
        #expect(try store.settings().pinRetries == 5)

        // A restart (power cycle) lifts the block; the right PIN restores the counter.
        harness = Harness(store: store, seed: 2)
        platform = PlatformDouble(harness: harness)
        #expect(try await platform.retries() == (5, false))
        #expect(try await platform.pinToken("1234").status == 0)
        #expect(try await platform.retries() == (8, false))

        // Eight wrong PINs in all, with restarts, block the PIN for good.
        var all: [UInt8] = []
        for cycle in 0..<3 {
            harness = Harness(store: store, seed: UInt64(10 + cycle))
            platform = PlatformDouble(harness: harness, pinProtocol: cycle == 1 ? .one : .two)
            for _ in 0..<3 { all.append(try await platform.pinToken("9999").status) }
        }
        #expect(all == [0x31, 0x31, 0x34, 0x31, 0x31, 0x34, 0x31, 0x32, 0x32])
        #expect(try store.settings().pinRetries == 0)
        harness = Harness(store: store, seed: 20)
        platform = PlatformDouble(harness: harness)
        #expect(try await platform.pinToken("1234").status == 0x32)
        #expect(try await platform.changePIN(from: "1234", to: "5678") == 0x32)
        #expect(try await platform.retries() == (0, false))
    }

    @Test func aWrongPINReplacesTheKeyAgreementKey() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.setPIN("1234") == 0)
        let before = try await harness.send(.clientPIN, [1: 2, 2: 2]).body?[1]
        #expect(try await harness.send(.clientPIN, [1: 2, 2: 2]).body?[1] == before)
        #expect(try await platform.pinToken("4321").status == 0x31)
        #expect(try await harness.send(.clientPIN, [1: 2, 2: 2]).body?[1] != before)
    }

    @Test func changePIN() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.changePIN(from: "1234", to: "5678") == 0x35)  // no PIN yet
        #expect(try await platform.setPIN("1234") == 0)
        let token = try #require(try await platform.pinToken("1234", rpID: "example.com").token)
        #expect(try await platform.changePIN(from: "0000", to: "5678") == 0x31)
        #expect(try harness.store.settings().pinRetries == 7)
        #expect(try await platform.changePIN(from: "1234", to: "567") == 0x37)
        #expect(try harness.store.settings().pinHash == PlatformDouble.pinHash("1234"))
        #expect(try await platform.changePIN(from: "1234", to: "5678") == 0)
        #expect(try harness.store.settings().pinRetries == 8)
        #expect(try await platform.pinToken("1234").status == 0x31)
        #expect(try await platform.pinToken("5678").status == 0)
        // The token from before the change no longer works.
        let request = Fixtures.makeCredential(extra: platform.param(token))
        #expect(try await harness.send(.makeCredential, request).status == 0x33)
    }

    @Test func tokenRequestRules() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.pinToken("1234").status == 0x35)  // PIN_NOT_SET
        #expect(try await platform.setPIN("1234") == 0)
        #expect(try await platform.pinToken("1234", permissions: 0).status == 0x02)
        #expect(try await platform.pinToken("1234", permissions: 0x08).status == 0x40)  // be: no biometrics
        #expect(try await platform.pinToken("1234", permissions: 0x100).status == 0x02)
        #expect(try await platform.pinToken("1234", permissions: nil, rpID: "example.com").status == 0x02)
        #expect(try await platform.pinToken("1234", permissions: nil).status == 0)  // legacy getPinToken
        #expect(try harness.store.settings().pinRetries == 8)
    }

    @Test func forcePINChangeRefusesTokensAndTheSamePIN() async throws {
        var settings = AuthenticatorSettings(pinHash: PlatformDouble.pinHash("1234"), pinCodePointCount: 4)
        settings.forcePINChange = true
        let harness = Harness(store: InMemoryCredentialStore(settings: settings))
        let platform = PlatformDouble(harness: harness)
        #expect(try await harness.send(.getInfo).body?[0x0C] == true)
        #expect(try await platform.pinToken("1234").status == 0x37)
        #expect(try await platform.changePIN(from: "1234", to: "1234") == 0x37)
        #expect(try await platform.changePIN(from: "1234", to: "4321") == 0)
        #expect(try await platform.pinToken("4321").status == 0)
        #expect(try harness.store.settings().forcePINChange == false)
    }

    @Test func resetForgetsThePIN() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.setPIN("1234") == 0)
        #expect(try await harness.send(.reset).status == 0)
        #expect(try harness.store.settings() == AuthenticatorSettings())
    }
}

struct PinUvAuthTokenUseTests {
    static func withPIN(_ pinProtocol: PinUvAuthProtocol = .two) async throws -> (Harness, PlatformDouble) {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness, pinProtocol: pinProtocol)
        #expect(try await platform.setPIN("1234") == 0)
        return (harness, platform)
    }

    @Test(arguments: ClientPINTests.protocols) func makeCredentialAndGetAssertionWithPINTokens(
        pinProtocol: PinUvAuthProtocol
    ) async throws {
        let (harness, platform) = try await Self.withPIN(pinProtocol)
        let token = try #require(try await platform.pinToken("1234", rpID: "example.com").token)
        let (status, body) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(options: ["rk": true], extra: platform.param(token)))
        #expect(status == 0)
        let flags = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).flags
        #expect(flags.isSuperset(of: [.userPresent, .userVerified]))
        // A PIN token does not prove presence at the authenticator: the user is asked, without verification.
        #expect(harness.user.requests.last?.requiresPresence == true)
        #expect(harness.user.requests.last?.requiresVerification == false)
        // Spent: mc and ga permissions are cleared after use.
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(userID: [9], extra: platform.param(token)))
                .status == 0x33)

        let assertionToken = try #require(try await platform.pinToken("1234", permissions: 0x02).token)
        let assertion = try await harness.send(
            .getAssertion, Fixtures.getAssertion(extra: platform.assertionParam(assertionToken)))
        #expect(assertion.status == 0)
        let assertionFlags = try AuthenticatorData(bytes: try #require(assertion.body?[2]?.bytesValue)).flags
        #expect(assertionFlags.isSuperset(of: [.userPresent, .userVerified]))
        #expect(assertion.body?[4]?["name"] == "alice")  // names after verification
    }

    @Test func permissionsRelyingPartyProtocolAndExpiry() async throws {
        let (harness, platform) = try await Self.withPIN()
        // ga only: not for makeCredential.
        var token = try #require(try await platform.pinToken("1234", permissions: 0x02).token)
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(extra: platform.param(token))).status
                == 0x33)
        // Bound to another relying party.
        token = try #require(try await platform.pinToken("1234", rpID: "other.example").token)
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(extra: platform.param(token))).status
                == 0x33)
        // Used with the other protocol.
        token = try #require(try await platform.pinToken("1234").token)
        let otherProtocol = PlatformDouble(harness: harness, pinProtocol: .one)
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(extra: otherProtocol.param(token))).status
                == 0x33)
        // Wrong message (another clientDataHash).
        #expect(
            try await harness.send(
                .makeCredential, Fixtures.makeCredential(extra: platform.param(token, [UInt8](repeating: 1, count: 32)))
            ).status == 0x33)
        // Not used within 30 seconds of issue: expired.
        harness.clock.advance(by: .seconds(31))
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(extra: platform.param(token))).status
                == 0x33)
        // An unbound token binds to the first relying party it is used for.
        token = try #require(try await platform.pinToken("1234", permissions: 0x03).token)
        let up = try await harness.send(
            .getAssertion,
            Fixtures.getAssertion(rp: "nothing.example", options: ["up": false], extra: platform.assertionParam(token)))
        #expect(up.status == 0x2E)
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(extra: platform.param(token))).status
                == 0x33)
        #expect(try harness.store.allCredentials().isEmpty)
    }

    @Test func zeroLengthPinUvAuthParamAsksForATouch() async throws {
        let harness = Harness()
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(extra: [8: .bytes([]), 9: 2])).status
                == 0x35)
        #expect(harness.user.requests.last?.action == .selection)
        #expect(try await PlatformDouble(harness: harness).setPIN("1234") == 0)
        #expect(
            try await harness.send(.getAssertion, Fixtures.getAssertion(extra: [6: .bytes([]), 7: 2])).status == 0x31)
        let denied = Harness(answers: [.denied])
        #expect(try await denied.send(.makeCredential, Fixtures.makeCredential(extra: [8: .bytes([])])).status == 0x27)
    }

    @Test func uvTokenUsesBuiltInVerificationAndCountsFailures() async throws {
        let harness = Harness(answers: [
            .approved(userVerified: true, selectedAccount: nil), .verificationFailed, .verificationFailed,
        ])
        let platform = PlatformDouble(harness: harness)
        let token = try #require(try await platform.uvToken(rpID: "example.com").token)
        #expect(
            harness.user.requests.last
                == ConsentRequest(
                    action: .verifyUser(relyingPartyID: "example.com"), requiresPresence: true,
                    requiresVerification: true))
        let before = harness.user.requests.count
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(extra: platform.param(token))).status == 0)
        #expect(harness.user.requests.count == before)  // presence was proven when the token was issued
        #expect(try await platform.uvToken().status == 0x3F)
        #expect(try harness.store.settings().uvRetries == 7)
        #expect(try await harness.send(.clientPIN, [1: 2, 2: 7]).body?[5] == 7)
        #expect(try await platform.uvToken().status == 0x3F)
        #expect(try await platform.uvToken().status == 0)
        #expect(try harness.store.settings().uvRetries == 8)
    }

    @Test func uvBlockedAtZeroUntilACorrectPIN() async throws {
        let store = InMemoryCredentialStore(settings: AuthenticatorSettings(uvRetries: 1))
        let harness = Harness(answers: [.verificationFailed], store: store)
        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.uvToken().status == 0x3C)
        #expect(try await platform.uvToken().status == 0x3C)
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential()).status == 0x3C)
        #expect(harness.user.requests.count == 1)
        #expect(try await platform.setPIN("1234") == 0)
        #expect(try store.settings().uvRetries == 0)
        #expect(try await platform.pinToken("1234").status == 0)
        #expect(try store.settings().uvRetries == 8)
        #expect(try await platform.uvToken().status == 0)
    }

    @Test func aBlockedPINDisablesBuiltInVerificationToo() async throws {
        let settings = AuthenticatorSettings(
            pinHash: PlatformDouble.pinHash("1234"), pinCodePointCount: 4, pinRetries: 0)
        let harness = Harness(store: InMemoryCredentialStore(settings: settings))
        #expect(try await PlatformDouble(harness: harness).uvToken().status == 0x32)
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential()).status == 0x32)
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential(options: nil)).status == 0)
        #expect(harness.user.requests.map(\.requiresVerification) == [false])
        #expect(try await harness.send(.reset).status == 0)
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential()).status == 0)
    }

    @Test func alwaysUVAsksForVerificationEvenWithoutTheOption() async throws {
        let harness = Harness(store: InMemoryCredentialStore(settings: AuthenticatorSettings(alwaysUV: true)))
        #expect(try await harness.send(.getInfo).body?[4]?["makeCredUvNotRqd"] == false)
        let (status, body) = try await harness.send(.makeCredential, Fixtures.makeCredential(options: nil))
        #expect(status == 0)
        #expect(harness.user.requests.last?.requiresVerification == true)
        let flags = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).flags
        #expect(flags.contains(.userVerified))
    }

    @Test func builtInUVStillWorksWithAPINSet() async throws {
        let (harness, _) = try await Self.withPIN()
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential()).status == 0)
        #expect(
            try await harness.send(.makeCredential, Fixtures.makeCredential(userID: [7], options: ["rk": true])).status
                == 0x36)
    }
}
