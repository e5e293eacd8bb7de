import Basics
import CBOR
import CTAP2
import Crypto
import Foundation
import Synchronization
import TestSupport
import Testing
import WebAuthn

struct GetInfoTests {
    /// Exactly what is implemented, nothing more (CTAP 2.1 §6.4).
    @Test func reportsExactlyWhatIsImplemented() async throws {
        let harness = Harness()
        let (status, info) = try await harness.send(.getInfo)
        #expect(status == 0)
        let expected: CBORValue = [
            1: ["FIDO_2_0", "FIDO_2_1"],
            2: [
                "credProtect", "hmac-secret", "hmac-secret-mc", "credBlob", "largeBlobKey", "minPinLength",
                "thirdPartyPayment",
            ],
            3: .bytes([UInt8](hex: "8391e37832c74aa5ad166f0cf4ad7b23")!),
            4: [
                "rk": true, "up": true, "uv": true, "clientPin": false, "pinUvAuthToken": true,
                "makeCredUvNotRqd": true, "credMgmt": true, "perCredMgmtRO": true, "authnrCfg": true, "uvAcfg": true,
                "setMinPINLength": true, "alwaysUv": false, "largeBlobs": true,
            ],
            5: 7609,
            6: [2, 1],
            7: 16,
            8: 128,
            9: ["usb"],
            10: [
                ["alg": -7, "type": "public-key"], ["alg": -8, "type": "public-key"],
                ["alg": -9, "type": "public-key"], ["alg": -19, "type": "public-key"],
            ],
            0x0B: 4096,
            0x0C: false,
            0x0D: 4,
            0x0E: 0x00_01_00,
            0x0F: 32,
            0x10: 8,
            0x16: ["none"],
            0x17: 0,
            0x1A: ["usb"],
            0x1B: false,
            0x1D: 63,
            0x1F: [2, 3],
        ]
        #expect(info == expected)
    }

    /// A hybrid phone answering one request per QR code offers nothing that needs a second request, and since it
    /// verifies every request, no makeCredUvNotRqd either: options rk, up and uv, as Android and iOS phones send.
    @Test func oneRequestPerSessionLeavesOutPinUvAuthFeatures() async throws {
        let info = try await Harness(configuration: .hybridPhone(oneRequestPerSession: true)).send(.getInfo).body
        #expect(info?[2] == ["credProtect", "credBlob", "minPinLength"])
        #expect(info?[4] == ["rk": true, "up": true, "uv": true])
        #expect(info?[9] == ["hybrid"])
        #expect(info?[6] == nil && info?[0x0B] == nil && info?[0x0D] == nil)
        // attestationFormats (CTAP 2.2) is the one field added; the PIN's and reset's are left out with the PIN.
        #expect(info?[0x16] == ["none"] && info?[0x1D] == nil && info?[0x1F] == nil)
        #expect(info?.mapValue?.keys.count == 12)

        // A security key answering one request per session (no role uses it) keeps makeCredUvNotRqd.
        var configuration = AuthenticatorConfiguration()
        configuration.oneRequestPerSession = true
        let key = try await Harness(configuration: configuration).send(.getInfo).body
        #expect(key?[4] == ["rk": true, "up": true, "uv": true, "makeCredUvNotRqd": true])
        #expect(key?[9] == ["usb"])
    }

    /// The two roles' transports: a security key (`passkey serve`) `usb`, a phone (`passkey scan`) `hybrid` only.
    @Test func transportsPerRole() async throws {
        #expect(try await Harness(configuration: .securityKey).send(.getInfo).body?[9] == ["usb"])
        #expect(AuthenticatorConfiguration.securityKey.attestationFormat == .packedSelf)
        let phone = try await Harness(configuration: .hybridPhone(oneRequestPerSession: false)).send(.getInfo).body
        #expect(phone?[9] == ["hybrid"])
        // A phone that keeps the tunnel open offers everything, and says it verifies every request.
        #expect(phone?[4]?["alwaysUv"] == true && phone?[4]?["makeCredUvNotRqd"] == false)
        #expect(phone?[4]?["clientPin"] == false && phone?[6] == [2, 1])
    }

    @Test func followsTheSettings() async throws {
        let settings = AuthenticatorSettings(
            pinHash: [UInt8](repeating: 1, count: 16), pinCodePointCount: 4, minimumPINLength: 8, alwaysUV: true,
            forcePINChange: true)
        let harness = Harness(store: InMemoryCredentialStore(settings: settings))
        let info = try await harness.send(.getInfo).body
        #expect(info?[4]?["clientPin"] == true)
        #expect(info?[4]?["alwaysUv"] == true)
        #expect(info?[4]?["makeCredUvNotRqd"] == false)
        #expect(info?[0x0C] == true)
        #expect(info?[0x0D] == 8)
    }
}

struct MakeCredentialTests {
    @Test func createsDiscoverableCredentialWithNoneAttestation() async throws {
        let harness = Harness()
        let (status, body) = try await harness.send(.makeCredential, Fixtures.makeCredential())
        #expect(status == 0)
        #expect(body?[1] == "none")
        #expect(body?[3] == [:])
        let authData = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue))
        #expect(authData.relyingPartyIDHash == Array(SHA256.hash(data: Array("example.com".utf8))))
        #expect(
            authData.flags == [.userPresent, .userVerified, .backupEligible, .backupState, .attestedCredentialData])
        #expect(authData.signCount == 0)
        let attested = try #require(authData.attestedCredentialData)
        #expect(attested.aaguid == AuthenticatorConfiguration.projectAAGUID)
        #expect(attested.credentialID.count == 32)

        let stored = try harness.store.allCredentials()
        #expect(stored.count == 1)
        #expect(stored[0].id == attested.credentialID)
        #expect(stored[0].isDiscoverable)
        #expect(stored[0].userName == "alice")
        #expect(stored[0].privateKey.publicKey == attested.publicKey)
        #expect(
            harness.user.requests == [
                ConsentRequest(
                    action: .makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: "Alice"),
                    requiresPresence: true,
                    requiresVerification: true
                )
            ])
    }

    /// Names as long as a request can carry (two of 3,600 bytes fit in 7,609) register; they are kept to 64 bytes
    /// at a character boundary, so a sign-in with UV, which returns them, stays far below the CTAPHID message
    /// limit (issue 10, defect 7).
    @Test(arguments: [
        (String(repeating: "n", count: 3600), String(repeating: "n", count: 64)),
        (String(repeating: "é", count: 40), String(repeating: "é", count: 32)),
        ("a" + String(repeating: "🙂", count: 20), "a" + String(repeating: "🙂", count: 15)),
        ("short", "short"),
    ])
    func longNamesAreKeptTo64Bytes(name: String, kept: String) async throws {
        let harness = Harness()
        let request = Fixtures.makeCredential(
            extra: [
                2: ["id": "example.com", "name": .text(String(name.prefix(100)))],
                3: ["id": .bytes([UInt8](repeating: 7, count: 64)), "name": .text(name), "displayName": .text(name)],
            ])
        #expect(try await harness.send(.makeCredential, request).status == 0)
        let stored = try #require(try harness.store.allCredentials().first)
        #expect(stored.userName == kept)
        #expect(stored.userDisplayName == kept)
        #expect(stored.relyingPartyName == kept)

        let response = await harness.sendRaw(
            [CTAPCommand.getAssertion.rawValue] + Fixtures.getAssertion(options: ["uv": true]).encoded())
        #expect(response.first == 0)
        #expect(response.count < 1024)
        let user = try CBORValue(decoding: response.dropFirst())[4]
        #expect(user?["name"] == .text(kept))
    }

    @Test func packedSelfAttestationVerifies() async throws {
        var configuration = AuthenticatorConfiguration()
        configuration.attestationFormat = .packedSelf
        let harness = Harness(configuration: configuration)
        let (status, body) = try await harness.send(.makeCredential, Fixtures.makeCredential())
        #expect(status == 0)
        #expect(body?[1] == "packed")
        let authData = try #require(body?[2]?.bytesValue)
        let statement = try #require(body?[3])
        #expect(statement["alg"] == -7)
        let attested = try #require(try AuthenticatorData(bytes: authData).attestedCredentialData)
        let key = try attested.publicKey.signingKey()
        let signature = try P256.Signing.ECDSASignature(derRepresentation: try #require(statement["sig"]?.bytesValue))
        #expect(key.isValidSignature(signature, for: authData + Fixtures.clientDataHash))
    }

    @Test func nonDiscoverableWithoutUserVerification() async throws {
        let harness = Harness()
        let (status, body) = try await harness.send(.makeCredential, Fixtures.makeCredential(options: nil))
        #expect(status == 0)
        let flags = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).flags
        #expect(flags.contains(.userPresent) && !flags.contains(.userVerified))
        #expect(try harness.store.allCredentials().first?.isDiscoverable == false)
    }

    @Test(
        arguments: [
            (
                Fixtures.makeCredential(algorithms: [
                    ["alg": -35, "type": "public-key"], ["alg": -257, "type": "public-key"],
                ]), 0x26
            ),
            (Fixtures.makeCredential(algorithms: [["alg": -7, "type": "other-type"]]), 0x26),
            (Fixtures.makeCredential(algorithms: []), 0x26),
            (Fixtures.makeCredential(options: ["up": false, "uv": true, "rk": true]), 0x2C),
            (Fixtures.makeCredential(options: ["rk": 1]), 0x11),
            (Fixtures.makeCredential(extra: [1: .bytes([1, 2, 3])]), 0x03),
            (Fixtures.makeCredential(userID: []), 0x03),
            (Fixtures.makeCredential(userID: [UInt8](repeating: 7, count: 65)), 0x03),
            (Fixtures.makeCredential(extra: [1: "not bytes"]), 0x11),
            (Fixtures.makeCredential(extra: [2: ["name": "no id"]]), 0x14),
            (Fixtures.makeCredential(extra: [2: ["id": 5]]), 0x11),
            (Fixtures.makeCredential(extra: [3: ["name": "no id"]]), 0x14),
            (Fixtures.makeCredential(extra: [4: ["alg": -7]]), 0x11),
            (Fixtures.makeCredential(algorithms: [["type": "public-key"]]), 0x14),
            (Fixtures.makeCredential(algorithms: [["alg": "ES256", "type": "public-key"]]), 0x11),
            (Fixtures.makeCredential(extra: [5: [["type": "public-key"]]]), 0x14),
            (Fixtures.makeCredential(extra: [6: "not a map"]), 0x11),
            (Fixtures.makeCredential(extra: [8: .bytes([1]), 9: 3]), 0x02),
            (Fixtures.makeCredential(extra: [8: .bytes([1]), 9: 1]), 0x33),
            (Fixtures.makeCredential(extra: [8: .bytes([UInt8](repeating: 1, count: 32)), 9: 2]), 0x33),
            (Fixtures.makeCredential(extra: [8: .bytes([1]), 9: "one"]), 0x11),
            (Fixtures.makeCredential(extra: [8: .bytes([1])]), 0x14),
            (Fixtures.makeCredential(extra: [10: 1]), 0x02),
            ([1: .bytes(Fixtures.clientDataHash), 2: ["id": "example.com"], 3: ["id": .bytes([1])]], 0x14),
            (["not": "integer keys"], 0x14),
            ([1, 2, 3], 0x11),
        ] as [(CBORValue, Int)])
    func rejectsBadRequestsAndStoresNothing(request: CBORValue, expected: Int) async throws {
        let harness = Harness()
        let (status, body) = try await harness.send(.makeCredential, request)
        #expect(status == UInt8(expected))
        #expect(body == nil)
        #expect(try harness.store.allCredentials().isEmpty)
    }

    @Test func unknownKeysAndAlgorithmsAreIgnored() async throws {
        let harness = Harness()
        let request = Fixtures.makeCredential(
            algorithms: [["alg": -257, "type": "public-key"], ["alg": -7, "type": "public-key"]],
            extra: [0x20: "future parameter", 6: ["unknownExtension": true]]
        )
        #expect(try await harness.send(.makeCredential, request).status == 0)
    }

    @Test(arguments: [
        (ConsentResult.denied, 0x27), (.cancelled, 0x2D), (.timedOut, 0x2F), (.verificationFailed, 0x3F),
    ])
    func userRefusalStoresNothing(answer: ConsentResult, expected: Int) async throws {
        let harness = Harness(answers: [answer])
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential()).status == UInt8(expected))
        #expect(try harness.store.allCredentials().isEmpty)
    }

    @Test func excludeListAsksThenRefuses() async throws {
        let harness = Harness()
        let (_, body) = try await harness.send(.makeCredential, Fixtures.makeCredential())
        let authData = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue))
        let id = try #require(authData.attestedCredentialData).credentialID
        let (status, _) = try await harness.send(
            .makeCredential, Fixtures.makeCredential(userID: [9], name: "bob", excludeList: [[0xAA], id]))
        #expect(status == 0x19)
        #expect(harness.user.requests.last?.action == .credentialExcluded(relyingPartyID: "example.com"))
        #expect(try harness.store.allCredentials().count == 1)

        // The same credential ID does not exclude a registration for another relying party.
        let other = try await harness.send(
            .makeCredential, Fixtures.makeCredential(rp: "other.example", excludeList: [id]))
        #expect(other.status == 0)
    }

    @Test func discoverableCredentialReplacesSameUser() async throws {
        let harness = Harness()
        _ = try await harness.send(.makeCredential, Fixtures.makeCredential(name: "alice"))
        _ = try await harness.send(.makeCredential, Fixtures.makeCredential(name: "alice-renamed"))
        let stored = try harness.store.allCredentials()
        #expect(stored.map(\.userName) == ["alice-renamed"])
    }

    @Test func fullStoreIsKeyStoreFull() async throws {
        let harness = Harness(store: InMemoryCredentialStore(capacity: 1))
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential(userID: [1])).status == 0)
        #expect(try await harness.send(.makeCredential, Fixtures.makeCredential(userID: [2])).status == 0x28)
    }

    @Test func backupEligibilityIsFixedAtCreation() async throws {
        let store = InMemoryCredentialStore()
        let first = Harness(store: store)
        _ = try await first.send(.makeCredential, Fixtures.makeCredential())
        var configuration = AuthenticatorConfiguration()
        configuration.backupEligible = false
        let later = Harness(configuration: configuration, store: store)
        let (_, body) = try await later.send(.getAssertion, Fixtures.getAssertion())
        let flags = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).flags
        #expect(flags.contains(.backupEligible) && flags.contains(.backupState))
    }
}

struct MessageTests {
    @Test(arguments: [
        ([] as [UInt8], 0x03),
        ([0x42], 0x01),
        ([0x01, 0xA1], 0x12),
        ([0x01, 0xA2, 0x01, 0x00, 0x01, 0x00], 0x12),  // a duplicate key
        ([0x01, 0xA2, 0x02, 0x00, 0x01, 0x00], 0x11),  // keys out of order are read: then clientDataHash is no byte string
        ([0x02, 0x5F, 0xFF], 0x12),
        ([0x02, 0xA0, 0x00], 0x12),
        ([0x01], 0x14),
        ([0x02], 0x14),
    ])
    func malformedMessages(message: [UInt8], expected: Int) async {
        let harness = Harness()
        #expect(await harness.sendRaw(message) == [UInt8(expected)])
    }

    /// What Firefox (authenticator-rs) sends a key with built-in user verification and no token: getAssertion's
    /// options with `uv` before `up`, out of CTAP2's canonical order. Security keys read it, and so does this one.
    @Test func firefoxsOptionsOrderIsRead() async throws {
        let harness = Harness()
        let created = try await harness.send(.makeCredential, Fixtures.makeCredential())
        #expect(created.status == 0)
        let options: [UInt8] = [0xA2, 0x62] + Array("uv".utf8) + [0xF5, 0x62] + Array("up".utf8) + [0xF5]
        let request: [UInt8] =
            [CTAPCommand.getAssertion.rawValue, 0xA3, 0x01, 0x6B] + Array("example.com".utf8) + [0x02, 0x58, 0x20]
            + Fixtures.clientDataHash + [0x05] + options
        let answer = await harness.sendRaw(request)
        #expect(answer.first == 0x00)
        let flags = try AuthenticatorData(
            bytes: try #require(try CBORValue(decoding: Array(answer.dropFirst())).mapValue?[2]?.bytesValue)
        ).flags
        #expect(flags.contains(.userPresent) && flags.contains(.userVerified))
    }

    @Test func oversizedMessageIsRejected() async {
        let harness = Harness()
        #expect(await harness.sendRaw([0x04] + [UInt8](repeating: 0, count: 7609)) == [0x03])
    }
}

struct GetAssertionTests {
    /// Makes credentials for each name in order; returns their IDs.
    static func register(_ names: [String], on harness: Harness, rp: String = "example.com") async throws -> [[UInt8]] {
        var ids: [[UInt8]] = []
        for (index, name) in names.enumerated() {
            let (status, body) = try await harness.send(
                .makeCredential, Fixtures.makeCredential(rp: rp, userID: [UInt8(index + 1)], name: name))
            #expect(status == 0)
            ids.append(
                try #require(try AuthenticatorData(bytes: body![2]!.bytesValue!).attestedCredentialData).credentialID)
        }
        return ids
    }

    static func verify(_ body: CBORValue?, store: InMemoryCredentialStore) async throws -> AuthenticatorData {
        let id = try #require(body?[1]?["id"]?.bytesValue)
        let credential = try #require(try store.credential(id: id))
        let authData = try #require(body?[2]?.bytesValue)
        let signature = try #require(body?[3]?.bytesValue)
        #expect(credential.privateKey.publicKey.isValidSignature(signature, for: authData + Fixtures.clientDataHash))
        return try AuthenticatorData(bytes: authData)
    }

    @Test func signsWithAllowList() async throws {
        let harness = Harness()
        let ids = try await Self.register(["alice"], on: harness)
        let (status, body) = try await harness.send(
            .getAssertion, Fixtures.getAssertion(allowList: [[0x01, 0x02], ids[0]]))
        #expect(status == 0)
        #expect(body?[1] == ["type": "public-key", "id": .bytes(ids[0])])
        let authData = try await Self.verify(body, store: harness.store)
        #expect(authData.flags == [.userPresent, .backupEligible, .backupState])
        #expect(authData.signCount == 0)
        #expect(body?[4] == ["id": .bytes([1])])
        #expect(body?[5] == nil)
        #expect(
            harness.user.requests.last?.action
                == .getAssertion(
                    relyingPartyID: "example.com",
                    accounts: [
                        AccountSummary(
                            relyingPartyID: "example.com", userName: "alice", userDisplayName: "Alice",
                            credentialID: ids[0])
                    ],
                    chooseOnAuthenticator: false
                ))
    }

    @Test func userNamesOnlyAfterVerification() async throws {
        let harness = Harness()
        _ = try await Self.register(["alice"], on: harness)
        let (_, body) = try await harness.send(.getAssertion, Fixtures.getAssertion(options: ["uv": true]))
        #expect(body?[4] == ["id": .bytes([1]), "name": "alice", "displayName": "Alice"])
        let authData = try await Self.verify(body, store: harness.store)
        #expect(authData.flags.contains(.userVerified))
    }

    @Test func severalAccountsPageNewestFirst() async throws {
        let harness = Harness()
        let ids = try await Self.register(["alice", "bob", "carol"], on: harness)
        let (status, first) = try await harness.send(.getAssertion, Fixtures.getAssertion())
        #expect(status == 0)
        #expect(first?[5] == 3)
        #expect(first?[1]?["id"] == .bytes(ids[2]))
        _ = try await Self.verify(first, store: harness.store)

        let (_, second) = try await harness.send(.getNextAssertion)
        #expect(second?[1]?["id"] == .bytes(ids[1]))
        #expect(second?[5] == nil)
        _ = try await Self.verify(second, store: harness.store)
        let (_, third) = try await harness.send(.getNextAssertion)
        #expect(third?[1]?["id"] == .bytes(ids[0]))
        #expect(try await harness.send(.getNextAssertion).status == 0x30)
        #expect(harness.user.requests.count == 4)
    }

    @Test func nextAssertionExpiresAndIsClearedByOtherCommands() async throws {
        let harness = Harness()
        _ = try await Self.register(["alice", "bob"], on: harness)
        _ = try await harness.send(.getAssertion, Fixtures.getAssertion())
        harness.clock.advance(by: .seconds(31))
        #expect(try await harness.send(.getNextAssertion).status == 0x30)

        _ = try await harness.send(.getAssertion, Fixtures.getAssertion())
        _ = try await harness.send(.getInfo)
        #expect(try await harness.send(.getNextAssertion).status == 0x30)
        #expect(try await Harness().send(.getNextAssertion).status == 0x30)
    }

    @Test func chooserOnAuthenticatorReturnsTheChosenAccount() async throws {
        var configuration = AuthenticatorConfiguration()
        configuration.accountSelection = .authenticator
        let store = InMemoryCredentialStore()
        let ids = try await Self.register(["alice", "bob"], on: Harness(store: store))
        let harness = Harness(
            answers: [.approved(userVerified: false, selectedAccount: 1)], configuration: configuration, store: store)
        let (status, body) = try await harness.send(.getAssertion, Fixtures.getAssertion())
        #expect(status == 0)
        #expect(body?[1]?["id"] == .bytes(ids[0]))
        #expect(body?[5] == nil)
        #expect(body?[6] == true)
        _ = try await Self.verify(body, store: harness.store)
    }

    @Test func silentAssertionDoesNotPrompt() async throws {
        let harness = Harness()
        let ids = try await Self.register(["alice"], on: harness)
        let before = harness.user.requests.count
        let (status, body) = try await harness.send(
            .getAssertion, Fixtures.getAssertion(allowList: [ids[0]], options: ["up": false]))
        #expect(status == 0)
        #expect(harness.user.requests.count == before)
        let flags = try await Self.verify(body, store: harness.store).flags
        #expect(!flags.contains(.userPresent))
    }

    @Test func noCredentialsCases() async throws {
        let harness = Harness()
        let ids = try await Self.register(["alice"], on: harness, rp: "other.example")
        _ = try await harness.send(.makeCredential, Fixtures.makeCredential(userID: [42], options: nil))
        let before = harness.user.requests.count
        // Another relying party's credential ID, an unknown ID, and a non-discoverable credential without allowList.
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [ids[0]])).status == 0x2E)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion(allowList: [[1, 2, 3]])).status == 0x2E)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion()).status == 0x2E)
        #expect(harness.user.requests.count == before)
    }

    @Test(
        arguments: [
            (Fixtures.getAssertion(options: ["rk": true]), 0x2B),
            (Fixtures.getAssertion(options: ["up": "yes"]), 0x11),
            (Fixtures.getAssertion(extra: [2: .bytes([1])]), 0x03),
            (Fixtures.getAssertion(extra: [1: .bytes([1])]), 0x11),
            (Fixtures.getAssertion(extra: [3: ["type": "public-key"]]), 0x11),
            (Fixtures.getAssertion(extra: [3: [["id": .bytes([1])]]]), 0x14),
            (Fixtures.getAssertion(extra: [6: .bytes([1]), 7: 3]), 0x02),
            (Fixtures.getAssertion(extra: [6: .bytes([1]), 7: 2]), 0x33),
            ([2: .bytes(Fixtures.clientDataHash)], 0x14),
            ([1: "example.com"], 0x14),
        ] as [(CBORValue, Int)])
    func rejectsBadRequests(request: CBORValue, expected: Int) async throws {
        let harness = Harness()
        _ = try await Self.register(["alice"], on: harness)
        #expect(try await harness.send(.getAssertion, request).status == UInt8(expected))
    }

    @Test(arguments: [(ConsentResult.denied, 0x27), (.cancelled, 0x2D), (.timedOut, 0x2F)])
    func refusalEndsTheRequest(answer: ConsentResult, expected: Int) async throws {
        let store = InMemoryCredentialStore()
        _ = try await Self.register(["alice"], on: Harness(store: store))
        let harness = Harness(answers: [answer], store: store)
        #expect(try await harness.send(.getAssertion, Fixtures.getAssertion()).status == UInt8(expected))
    }
}

struct ResetAndSelectionTests {
    @Test func resetDeletesEverythingAfterConsent() async throws {
        let harness = Harness()
        _ = try await GetAssertionTests.register(["alice", "bob"], on: harness)
        #expect(try await harness.send(.reset).status == 0)
        #expect(harness.user.requests.last?.action == .reset(passkeyCount: 2))
        #expect(try harness.store.allCredentials().isEmpty)
    }

    @Test func resetRefusedLateOrDenied() async throws {
        let late = Harness()
        _ = try await GetAssertionTests.register(["alice"], on: late)
        late.clock.advance(by: .seconds(11))
        #expect(try await late.send(.reset).status == 0x30)
        #expect(try late.store.allCredentials().count == 1)

        let denied = Harness(answers: [.approved(userVerified: false, selectedAccount: nil), .denied])
        _ = try await GetAssertionTests.register(["alice"], on: denied)
        #expect(try await denied.send(.reset).status == 0x27)
        #expect(try denied.store.allCredentials().count == 1)
    }

    @Test func selection() async throws {
        #expect(try await Harness().send(.selection).status == 0)
        #expect(try await Harness(answers: [.denied]).send(.selection).status == 0x27)
    }
}

/// A user who answers only when the test says so, and tells the test when asked.
final class GatedUser: UserInteraction {
    private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let (questions, asked) = AsyncStream.makeStream(of: Void.self)

    func requestConsent(_ request: ConsentRequest) async -> ConsentResult {
        await withCheckedContinuation { continuation in
            waiting.withLock { $0.append(continuation) }
            asked.yield()
        }
        return .approved(userVerified: request.requiresVerification, selectedAccount: nil)
    }

    /// Returns once the user has been asked (again).
    func nextQuestion() async {
        var iterator = questions.makeAsyncIterator()
        _ = await iterator.next()
    }

    func release() {
        for continuation in waiting.withLock({ list in
            defer { list.removeAll() }; return list
        }) { continuation.resume() }
    }
}

struct ConcurrencyTests {
    @Test func aSecondRequestWhileTheUserIsAskedIsBusy() async throws {
        let user = GatedUser()
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(store: InMemoryCredentialStore(), userInteraction: user))
        let first = Task {
            await authenticator.handle([CTAPCommand.makeCredential.rawValue] + Fixtures.makeCredential().encoded())
        }
        await user.nextQuestion()
        #expect(await authenticator.handle([CTAPCommand.getInfo.rawValue]) == [0x06])
        user.release()
        #expect(await first.value.first == 0)
        #expect(await authenticator.handle([CTAPCommand.getInfo.rawValue]).first == 0)
    }
}
