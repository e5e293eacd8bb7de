import CBOR
import CTAP2
import Foundation
import Testing
import WebAuthn

/// The questions a phone behind the key asks the store before it shows a QR code (issue 25): they must agree with
/// what getAssertion and makeCredential then do, and ask nobody.
struct PhoneBridgeQueriesTests {
    /// A store with a discoverable credential at each credProtect level for example.com and one for other.example;
    /// the IDs by level (1, 2, 3) and the other relying party's.
    static func harness() async throws -> (Harness, [Int: [UInt8]], [UInt8]) {
        let harness = Harness()
        var ids: [Int: [UInt8]] = [:]
        for level in 1...3 {
            ids[level] = try await CredProtectTests.register(harness, level: level, userID: [UInt8(level)])
        }
        let (status, body) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(rp: "other.example", userID: [9]))
        try #require(status == 0)
        let authData = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue))
        let other = try #require(authData.attestedCredentialData)
        return (harness, ids, other.credentialID)
    }

    enum Listed: Sendable, CaseIterable { case none, level1, level2, level3, otherRP, unknown }

    static let requests: [(Listed, String, Bool)] = Listed.allCases.flatMap { listed in
        ["example.com", "other.example", "absent.example"].flatMap { rp in [false, true].map { (listed, rp, $0) } }
    }

    @Test(arguments: requests)
    func storeCanAnswerIsTrueExactlyWhenGetAssertionFindsACredential(listed: Listed, rp: String, uv: Bool) async throws
    {
        let (harness, ids, other) = try await Self.harness()
        let allowList: [[UInt8]]
        switch listed {
        case .none: allowList = []
        case .level1: allowList = [try #require(ids[1])]
        case .level2: allowList = [try #require(ids[2])]
        case .level3: allowList = [try #require(ids[3])]
        case .otherRP: allowList = [other]
        case .unknown: allowList = [[UInt8](repeating: 0xEE, count: 32)]
        }
        let request = Fixtures.getAssertion(rp: rp, allowList: allowList, options: uv ? ["uv": true] : nil)
        let asked = harness.user.requests.count
        let canAnswer = await harness.authenticator.storeCanAnswer(try GetAssertionRequest(cbor: request))
        #expect(harness.user.requests.count == asked, "the question asked the user")
        let (status, _) = try await harness.send(.getAssertion, request)
        #expect(canAnswer == (status != CTAPError.noCredentials.rawValue), "status \(status)")
    }

    @Test func storeHoldsAnyLevelOfItsRelyingPartyButNotAnotherOrAnUnknownID() async throws {
        let (harness, ids, other) = try await Self.harness()
        func holds(_ id: [UInt8], _ rp: String = "example.com") async -> Bool {
            await harness.authenticator.storeHolds(
                excludeList: [CredentialDescriptor(type: "public-key", id: id)], relyingPartyID: rp)
        }
        for level in 1...3 {
            let id = try #require(ids[level])
            #expect(await holds(id))
        }
        #expect(await !holds(other))
        #expect(await holds(other, "other.example"))
        #expect(await !holds([UInt8](repeating: 0xEE, count: 32)))
        #expect(await !harness.authenticator.storeHolds(excludeList: [], relyingPartyID: "example.com"))
        #expect(harness.user.requests.count == 4, "only the four registrations asked the user")
        // makeCredential agrees: a held ID is excluded.
        let (status, _) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(userID: [7], excludeList: [try #require(ids[3])]))
        #expect(status == CTAPError.credentialExcluded.rawValue)
    }

    @Test func forgottenPendingAssertionsAreNotPagedThrough() async throws {
        let harness = Harness()
        _ = try await CredProtectTests.register(harness, level: 1, userID: [1])
        _ = try await CredProtectTests.register(harness, level: 1, userID: [2])
        let (status, body) = try await harness.send(.getAssertion, Fixtures.getAssertion())
        #expect(status == 0 && body?[5] == 2)
        harness.authenticator.forgetPendingAssertions()
        #expect(try await harness.send(.getNextAssertion).status == CTAPError.notAllowed.rawValue)
    }

    /// getInfo with a phone behind the key: built-in UV and nothing a platform would bind to this key.
    @Test func thePhoneBridgeProfileOffersUVAndNoPINOrTokens() async throws {
        let harness = Harness(configuration: .phoneBridge)
        let (status, info) = try await harness.send(.getInfo)
        #expect(status == 0)
        let options = try #require(info?[4]?.mapValue)
        #expect(options == ["rk": true, "up": true, "uv": true, "makeCredUvNotRqd": true])
        #expect(info?[6] == nil)
        #expect(info?[9] == ["usb"])
        #expect(info?[2] == ["credProtect", "credBlob", "minPinLength"])
        #expect(
            AuthenticatorConfiguration.phoneBridge.attestationFormat
                == AuthenticatorConfiguration.securityKey.attestationFormat)
    }
}
