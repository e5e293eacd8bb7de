import CBOR
import CTAP2
import Crypto
import Foundation
import TestSupport
import Testing
import WebAuthn

/// authenticatorCredentialManagement and authenticatorConfig with tokens from built-in UV and from a PIN.
struct CredentialManagementTests {
    static let cm = 0x04

    /// A pinUvAuthParam for credential management: over `subCommand ‖ subCommandParams`.
    static func request(
        _ platform: PlatformDouble, _ token: [UInt8], subcommand: UInt8, parameters: CBORValue? = nil
    ) -> CBORValue {
        let message = [subcommand] + (parameters?.encoded() ?? [])
        var map: [CBORValue: CBORValue] = [
            1: .int(Int(subcommand)), 3: .int(platform.pinProtocol.rawValue),
            4: .bytes(platform.pinProtocol.authenticate(key: token, message: message)),
        ]
        if let parameters { map[2] = parameters }
        return .map(map)
    }

    static func populated() async throws -> (Harness, PlatformDouble, [[UInt8]]) {
        let harness = Harness()
        var ids = try await GetAssertionTests.register(["alice", "bob"], on: harness)
        ids += try await GetAssertionTests.register(["carol"], on: harness, rp: "other.example")
        _ = try await harness.send(.makeCredential, Fixtures.makeCredential(userID: [42], options: nil))
        return (harness, PlatformDouble(harness: harness), ids)
    }

    @Test func metadataRelyingPartiesAndCredentials() async throws {
        let (harness, platform, ids) = try await Self.populated()
        let token = try #require(try await platform.uvToken(permissions: Self.cm).token)

        let metadata = try await harness.send(.credentialManagement, Self.request(platform, token, subcommand: 1))
        #expect(metadata.status == 0)
        #expect(metadata.body?[1] == 3)  // the non-discoverable credential is not counted
        #expect(metadata.body?[2] == .int(100_000 - 3))

        let first = try await harness.send(.credentialManagement, Self.request(platform, token, subcommand: 2))
        #expect(first.status == 0)
        #expect(first.body?[5] == 2)
        #expect(first.body?[3]?["id"] == "example.com")
        #expect(first.body?[3]?["name"] == "Example")
        #expect(first.body?[4] == .bytes(Array(SHA256.hash(data: Array("example.com".utf8)))))
        let second = try await harness.send(.credentialManagement, [1: 3])
        #expect(second.body?[3]?["id"] == "other.example")
        #expect(try await harness.send(.credentialManagement, [1: 3]).status == 0x30)

        let hash: CBORValue = .bytes(Array(SHA256.hash(data: Array("example.com".utf8))))
        let credentials = try await harness.send(
            .credentialManagement, Self.request(platform, token, subcommand: 4, parameters: [1: hash]))
        #expect(credentials.status == 0)
        #expect(credentials.body?[9] == 2)
        #expect(credentials.body?[6]?["name"] == "bob")  // newest first
        #expect(credentials.body?[7]?["id"] == .bytes(ids[1]))
        #expect(credentials.body?[10] == 1)
        let key = try COSEKey(coseRepresentation: try #require(credentials.body?[8]))
        #expect(try key == harness.store.credential(id: ids[1])?.privateKey.publicKey)
        let next = try await harness.send(.credentialManagement, [1: 5])
        #expect(next.body?[6]?["name"] == "alice")
        #expect(try await harness.send(.credentialManagement, [1: 5]).status == 0x30)

        // Another command in between ends an enumeration.
        _ = try await harness.send(.credentialManagement, Self.request(platform, token, subcommand: 2))
        _ = try await harness.send(.getInfo)
        #expect(try await harness.send(.credentialManagement, [1: 3]).status == 0x30)

        let none: CBORValue = .bytes([UInt8](repeating: 0, count: 32))
        #expect(
            try await harness.send(
                .credentialManagement, Self.request(platform, token, subcommand: 4, parameters: [1: none])
            ).status == 0x2E)
    }

    @Test func deleteAndUpdateUser() async throws {
        let (harness, platform, ids) = try await Self.populated()
        let token = try #require(try await platform.uvToken(permissions: Self.cm).token)
        let descriptor: CBORValue = ["id": .bytes(ids[0]), "type": "public-key"]
        let update: CBORValue = [2: descriptor, 3: ["id": .bytes([1]), "name": "alice.new"]]
        #expect(
            try await harness.send(
                .credentialManagement, Self.request(platform, token, subcommand: 7, parameters: update)
            )
            .status == 0)
        let updated = try #require(try harness.store.credential(id: ids[0]))
        #expect(updated.userName == "alice.new" && updated.userDisplayName == nil)
        let wrongUser: CBORValue = [2: descriptor, 3: ["id": .bytes([9]), "name": "mallory"]]
        #expect(
            try await harness.send(
                .credentialManagement, Self.request(platform, token, subcommand: 7, parameters: wrongUser)
            ).status == 0x02)

        #expect(
            try await harness.send(
                .credentialManagement, Self.request(platform, token, subcommand: 6, parameters: [2: descriptor])
            ).status == 0)
        #expect(try harness.store.credential(id: ids[0]) == nil)
        #expect(
            try await harness.send(
                .credentialManagement, Self.request(platform, token, subcommand: 6, parameters: [2: descriptor])
            ).status == 0x2E)
        #expect(try harness.store.allCredentials().count == 3)
    }

    @Test func authorizationRules() async throws {
        let (harness, platform, ids) = try await Self.populated()
        #expect(try await harness.send(.credentialManagement, [1: 1]).status == 0x36)  // no pinUvAuthParam
        #expect(try await harness.send(.credentialManagement, [1: 1, 4: .bytes([1])]).status == 0x14)
        #expect(try await harness.send(.credentialManagement, [1: 1, 3: 9, 4: .bytes([1])]).status == 0x02)
        #expect(try await harness.send(.credentialManagement, [1: 0x20]).status == 0x3E)
        #expect(try await harness.send(.credentialManagement, [2: [:]]).status == 0x14)

        // mc/ga tokens cannot manage credentials.
        let mcToken = try #require(try await platform.uvToken(permissions: 0x03).token)
        #expect(
            try await harness.send(.credentialManagement, Self.request(platform, mcToken, subcommand: 1)).status == 0x33
        )

        // A token bound to other.example may list and delete its credentials only.
        let bound = try #require(try await platform.uvToken(permissions: Self.cm, rpID: "other.example").token)
        #expect(
            try await harness.send(.credentialManagement, Self.request(platform, bound, subcommand: 1)).status == 0x33)
        #expect(
            try await harness.send(.credentialManagement, Self.request(platform, bound, subcommand: 2)).status == 0x33)
        let exampleHash: CBORValue = .bytes(Array(SHA256.hash(data: Array("example.com".utf8))))
        let otherHash: CBORValue = .bytes(Array(SHA256.hash(data: Array("other.example".utf8))))
        #expect(
            try await harness.send(
                .credentialManagement, Self.request(platform, bound, subcommand: 4, parameters: [1: exampleHash])
            ).status == 0x33)
        #expect(
            try await harness.send(
                .credentialManagement, Self.request(platform, bound, subcommand: 4, parameters: [1: otherHash])
            ).status == 0)
        let alice: CBORValue = [2: ["id": .bytes(ids[0]), "type": "public-key"]]
        #expect(
            try await harness.send(
                .credentialManagement, Self.request(platform, bound, subcommand: 6, parameters: alice)
            )
            .status == 0x33)
        // A param computed over other parameters than those sent fails.
        var forged = Self.request(platform, bound, subcommand: 4, parameters: [1: otherHash]).mapValue!
        forged[2] = [1: exampleHash]
        #expect(try await harness.send(.credentialManagement, .map(forged)).status == 0x33)
        #expect(try harness.store.allCredentials().count == 4)
    }
}

struct AuthenticatorConfigTests {
    static let acfg = 0x20

    static func request(
        _ platform: PlatformDouble, _ token: [UInt8], subcommand: UInt8, parameters: CBORValue? = nil
    ) -> CBORValue {
        let message = [UInt8](repeating: 0xFF, count: 32) + [0x0D, subcommand] + (parameters?.encoded() ?? [])
        var map: [CBORValue: CBORValue] = [
            1: .int(Int(subcommand)), 3: .int(platform.pinProtocol.rawValue),
            4: .bytes(platform.pinProtocol.authenticate(key: token, message: message)),
        ]
        if let parameters { map[2] = parameters }
        return .map(map)
    }

    @Test func toggleAlwaysUV() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        let token = try #require(try await platform.uvToken(permissions: Self.acfg).token)
        #expect(try await harness.send(.config, Self.request(platform, token, subcommand: 2)).status == 0)
        #expect(try harness.store.settings().alwaysUV)
        let info = try await harness.send(.getInfo).body
        #expect(info?[4]?["alwaysUv"] == true && info?[4]?["makeCredUvNotRqd"] == false)
        #expect(try await harness.send(.config, Self.request(platform, token, subcommand: 2)).status == 0)
        #expect(try harness.store.settings().alwaysUV == false)
    }

    @Test func setMinPINLengthForcesAChangeOfAShorterPIN() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        #expect(try await platform.setPIN("12345") == 0)
        let token = try #require(try await platform.pinToken("12345", permissions: Self.acfg).token)
        let raise: CBORValue = [1: 6, 2: ["example.com"]]
        #expect(
            try await harness.send(.config, Self.request(platform, token, subcommand: 3, parameters: raise)).status == 0
        )
        let settings = try harness.store.settings()
        #expect(settings.minimumPINLength == 6 && settings.forcePINChange)
        #expect(settings.minimumPINLengthRelyingParties == ["example.com"])
        #expect(try await harness.send(.getInfo).body?[0x0D] == 6)
        let lower: CBORValue = [1: 5]
        #expect(
            try await harness.send(.config, Self.request(platform, token, subcommand: 3, parameters: lower)).status
                == 0x37)
        #expect(try await platform.pinToken("12345").status == 0x37)
        #expect(try await platform.changePIN(from: "12345", to: "54321") == 0x37)  // too short now
        #expect(try await platform.changePIN(from: "12345", to: "654321") == 0)

        // The minPinLength extension reports it to the listed relying party only.
        let newToken = try #require(try await platform.pinToken("654321", rpID: "example.com").token)
        let (status, body) = try await harness.send(
            .makeCredential,
            Fixtures.makeCredential(extra: platform.param(newToken).merging([6: ["minPinLength": true]]) { $1 }))
        #expect(status == 0)
        let extensions = try AuthenticatorData(bytes: try #require(body?[2]?.bytesValue)).extensions
        #expect(extensions == ["minPinLength": 6])
        let other = try await harness.send(
            .makeCredential, Fixtures.makeCredential(rp: "other.example", extra: [6: ["minPinLength": true]]))
        #expect(try AuthenticatorData(bytes: try #require(other.body?[2]?.bytesValue)).extensions == nil)
    }

    @Test func rulesAndEnterpriseAttestation() async throws {
        let harness = Harness()
        let platform = PlatformDouble(harness: harness)
        let token = try #require(try await platform.uvToken(permissions: Self.acfg).token)
        #expect(try await harness.send(.config, [1: 2]).status == 0x36)
        #expect(try await harness.send(.config, [1: 9]).status == 0x3E)
        #expect(try await harness.send(.config, Self.request(platform, token, subcommand: 1)).status == 0x02)
        let noPIN: CBORValue = [3: true]
        #expect(
            try await harness.send(.config, Self.request(platform, token, subcommand: 3, parameters: noPIN)).status
                == 0x35)
        let tooLong: CBORValue = [1: 64]
        #expect(
            try await harness.send(.config, Self.request(platform, token, subcommand: 3, parameters: tooLong)).status
                == 0x37)
        let mcToken = try #require(try await platform.uvToken(permissions: 0x01).token)
        #expect(try await harness.send(.config, Self.request(platform, mcToken, subcommand: 2)).status == 0x33)
        #expect(try harness.store.settings() == AuthenticatorSettings())
    }
}

/// Malformed requests to the CTAP 2.1 commands get the spec's status code and change nothing.
struct CTAP21MalformedRequestTests {
    @Test(
        arguments: [
            (CTAPCommand.credentialManagement, "not a map", 0x11),
            (.credentialManagement, [1: "one"], 0x11),
            (.credentialManagement, [1: 1, 2: "params"], 0x11),
            (.credentialManagement, [1: 1, 3: 2, 4: "param"], 0x11),
            (.credentialManagement, [1: 4, 3: 2, 4: .bytes([1])], 0x14),
            (.credentialManagement, [1: 6, 3: 2, 4: .bytes([1]), 2: [2: "id"]], 0x11),
            (.config, [2: [1: 6]], 0x14),
            (.config, [1: 3, 2: [1: 6], 3: 2, 4: .bytes([UInt8](repeating: 0, count: 32))], 0x33),
            (.config, [1: 3, 2: [1: "six"], 3: 2, 4: .bytes([1])], 0x33),
            (.config, [1: 2, 3: "two", 4: .bytes([1])], 0x11),
            (.largeBlobs, [1: "ten", 3: 0], 0x11),
            (.largeBlobs, [1: 10, 3: -1], 0x02),
            (.largeBlobs, [2: .bytes([1]), 3: 0], 0x02),
            (.largeBlobs, [2: .bytes([1]), 3: 5], 0x04),
            (.largeBlobs, [1: 1, 2: .bytes([1]), 3: 0], 0x02),
            (.clientPIN, [1: 2, 2: 9, 9: "mc"], 0x11),
            (.clientPIN, [1: 2, 2: 6, 3: [:], 9: 1], 0x02),
            (.clientPIN, [1: 2, 2: 6, 9: 0], 0x14),
            (.getAssertion, Fixtures.getAssertion(extra: [4: ["credBlob": 1]]), 0x11),
            (.makeCredential, Fixtures.makeCredential(extra: [6: ["hmac-secret": "yes"]]), 0x11),
            (.makeCredential, Fixtures.makeCredential(extra: [6: ["largeBlobKey": false]]), 0x2C),
            (
                .makeCredential, Fixtures.makeCredential(excludeList: (0..<17).map { [UInt8(truncatingIfNeeded: $0)] }),
                0x15
            ),
        ] as [(CTAPCommand, CBORValue, Int)])
    func refusedWithoutChanges(command: CTAPCommand, request: CBORValue, expected: Int) async throws {
        let harness = Harness()
        _ = try await GetAssertionTests.register(["alice"], on: harness)
        let before = try harness.store.allCredentials().map(\.id)
        #expect(try await harness.send(command, request).status == UInt8(expected))
        #expect(try harness.store.allCredentials().map(\.id) == before)
        #expect(try harness.store.settings() == AuthenticatorSettings())
        #expect(try harness.store.largeBlobArray() == nil)
    }

    @Test(arguments: [CTAPCommand.clientPIN, .credentialManagement, .config, .largeBlobs])
    func truncatedCBORIsInvalidAndAnEmptyBodyMissing(command: CTAPCommand) async {
        let harness = Harness()
        #expect(await harness.sendRaw([command.rawValue, 0xA2, 0x01]) == [0x12])
        #expect(await harness.sendRaw([command.rawValue]) == [0x14])
    }

    @Test func settingsNeverShowThePINHash() {
        let hash = [UInt8](repeating: 0xAB, count: 16)
        let settings = AuthenticatorSettings(pinHash: hash, pinCodePointCount: 4)
        var dumped = ""
        dump(settings, to: &dumped)
        for text in [dumped, "\(settings)", String(reflecting: settings)] {
            #expect(!text.contains("ab, ab") && !text.lowercased().contains("abab") && !text.contains("171"))
        }
    }
}

/// Random parameter maps for the CTAP 2.1 commands: every answer is a status byte (and CBOR on success), nothing
/// traps, and a PIN appears only through a successful setPIN.
struct CTAP21FuzzTests {
    static func value(_ random: inout SeededRandom, depth: Int = 0) -> CBORValue {
        switch Int.random(in: 0..<(depth > 1 ? 6 : 8), using: &random) {
        case 0: return .int(Int.random(in: -3...20, using: &random))
        case 1: return .int(Int.random(in: Int.min...Int.max, using: &random))
        case 2:
            return .bytes(
                (0..<Int.random(in: 0...80, using: &random)).map { _ in .random(in: 0...255, using: &random) })
        case 3: return .text(["example.com", "", "ü", "id", "type", "public-key"].randomElement(using: &random)!)
        case 4: return .bool(Bool.random(using: &random))
        case 5: return .bytes([UInt8](repeating: 0, count: [16, 32, 48, 64, 80].randomElement(using: &random)!))
        case 6:
            return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in value(&random, depth: depth + 1) })
        default:
            var map: [CBORValue: CBORValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let key: CBORValue =
                    Bool.random(using: &random)
                    ? .int(Int.random(in: -3...12, using: &random))
                    : .text(["id", "name", "hmac-secret", "credBlob", "largeBlobKey"].randomElement(using: &random)!)
                map[key] = value(&random, depth: depth + 1)
            }
            return .map(map)
        }
    }

    @Test func randomRequestsAnswerWithAStatusAndNeverTrap() async throws {
        var random = SeededRandom(seed: 2024)
        let harness = Harness()
        _ = try await GetAssertionTests.register(["alice"], on: harness)
        let commands: [CTAPCommand] = [.clientPIN, .credentialManagement, .config, .largeBlobs, .getAssertion]
        for iteration in 0..<3000 {
            if iteration % 200 == 0 { await Task.yield() }
            var map: [CBORValue: CBORValue] = [:]
            for key in 1...10 where Int.random(in: 0..<3, using: &random) == 0 {
                map[.int(key)] = Self.value(&random)
            }
            let command = commands.randomElement(using: &random)!
            let response = await harness.sendRaw([command.rawValue] + CBORValue.map(map).encoded())
            let status = try #require(response.first)
            if status != 0 {
                #expect(response.count == 1)
            }
        }
        #expect(try harness.store.settings().isPINSet == false)
    }
}
