import CBOR
import CTAP2
import CTAPHID
import CTAPHIDIO
import Crypto
import NIOCore
import NIOPosix
import SecurityKeyDriver
import Testing
import WebAuthn

/// Requests built as a browser builds them, and what the test checks in the answers.
enum Ceremony {
    static let relyingPartyID = "example.com"

    static func clientDataHash() -> [UInt8] { (0..<32).map { _ in .random(in: 0...255) } }

    static func makeCredential(
        _ clientDataHash: [UInt8], discoverable: Bool = true, userVerification: Bool = true
    ) -> [UInt8] {
        CTAPClient.makeCredentialMessage(
            clientDataHash: clientDataHash, relyingPartyID: relyingPartyID, relyingPartyName: "Example",
            userHandle: [0xA1, 0x1C, 0xE0], userName: "alice", userDisplayName: "Alice", discoverable: discoverable,
            userVerification: userVerification)
    }

    static func getAssertion(
        _ clientDataHash: [UInt8], allowList: [[UInt8]] = [], userVerification: Bool = true
    ) -> [UInt8] {
        CTAPClient.getAssertionMessage(
            relyingPartyID: relyingPartyID, clientDataHash: clientDataHash, allowList: allowList,
            userVerification: userVerification)
    }

    /// Registers, then signs in with the new credential, checking the signature with the registered key. Returns
    /// both answers' flags.
    static func roundTrip(_ key: SecurityKey, userVerification: Bool = true) async throws -> (
        registered: AuthenticatorFlags, signedIn: AuthenticatorFlags
    ) {
        let registration = clientDataHash()
        let made = try MakeCredentialResponse(
            ctapResponse: try await key.send(
                ctapCommand: makeCredential(registration, userVerification: userVerification)))
        let credential = try #require(made.attestationObject.authenticatorData.attestedCredentialData)
        let challenge = clientDataHash()
        let assertion = try GetAssertionResponse(
            ctapResponse: try await key.send(
                ctapCommand: getAssertion(
                    challenge, allowList: [credential.credentialID], userVerification: userVerification)))
        #expect(assertion.credentialID == credential.credentialID)
        let publicKey = try credential.publicKey.signingKey()
        let signature = try P256.Signing.ECDSASignature(derRepresentation: assertion.signature)
        #expect(publicKey.isValidSignature(signature, for: assertion.authenticatorData + challenge))
        let signedIn = try AuthenticatorData(bytes: assertion.authenticatorData)
        #expect(signedIn.relyingPartyIDHash == Array(SHA256.hash(data: Array(relyingPartyID.utf8))))
        return (made.attestationObject.authenticatorData.flags, signedIn.flags)
    }
}

/// The security key client against `passkey serve --udp` in process, through real UDP sockets on loopback.
struct SecurityKeyOverUDPTests {
    static func open(
        _ key: TestKey, _ configure: (inout SecurityKeyOptions) -> Void = { _ in }
    ) async throws -> SecurityKey {
        var options = SecurityKeyOptions()
        // The limit only ends a failing test: the in-process key answers in milliseconds, except on a loaded machine.
        options.commandTimeout = .seconds(60)
        configure(&options)
        return try await SecurityKey.open(key.spec, options: options)
    }

    @Test func getInfoTravelsOverUDP() async throws {
        let server = try await TestKey.start()
        defer { Task { await server.close() } }
        let key = try await Self.open(server)
        #expect(key.deviceInfo.capabilities == [.wink, .cbor, .nmsg])
        #expect(key.deviceInfo.protocolVersion == 2)
        #expect(key.name == "udp://127.0.0.1:\(server.server.localAddress.port ?? 0)")
        let info = try await key.getInfo()
        #expect(info.versions == ["FIDO_2_0", "FIDO_2_1"])
        #expect(info.aaguid == AuthenticatorConfiguration.securityKey.aaguid.bytes)
        #expect(info.transports == ["usb"])
        // getInfo is read once.
        _ = try await key.getInfo()
        #expect(server.log == ["getInfo -> OK"])
        await key.close()
    }

    @Test func aCredentialIsMadeAndUsedThroughTheRealUDPPath() async throws {
        let server = try await TestKey.start()
        defer { Task { await server.close() } }
        let key = try await Self.open(server)
        // The key verifies the user itself (the store passphrase, approved by the scripted user).
        let flags = try await Ceremony.roundTrip(key)
        #expect(flags.registered.contains([.userPresent, .userVerified]))
        #expect(flags.signedIn.contains([.userPresent, .userVerified]))
        // Each request goes as it is: no getInfo or clientPIN of the key's own in between.
        #expect(
            server.log == [
                "makeCredential options {rk: true, uv: true} pinUvAuthParam: absent -> OK",
                "getAssertion options {uv: true} pinUvAuthParam: absent -> OK",
            ])
        // Other commands pass through as they are, their error statuses returned rather than thrown.
        #expect(try await key.send(ctapCommand: [0x08]) == [CTAPError.notAllowed.rawValue])
        await key.close()
    }

    @Test func keepalivesSayTouchYourKeyWhileTheUserDecides() async throws {
        let user = ScriptedUser(waits: true)
        let server = try await TestKey.start(user: user)
        defer { Task { await server.close() } }
        let statuses = Events<SecurityKeyStatus>()
        let key = try await Self.open(server) { $0.onStatus = { statuses.record($0) } }
        let request = Task { try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash())) }
        #expect(await statuses.wait(for: .touchNeeded))
        #expect(await user.events.wait(for: .asked))
        user.approve()
        let response = try await request.value
        #expect(response.first == 0)
        // Told once, however many keepalives said so.
        #expect(statuses.count(of: .touchNeeded) == 1)
        await key.close()
    }

    @Test func cancelStopsTheAuthenticatorWaitingForTheUser() async throws {
        let user = ScriptedUser(waits: true)
        let server = try await TestKey.start(user: user)
        defer { Task { await server.close() } }
        let statuses = Events<SecurityKeyStatus>()
        let key = try await Self.open(server) { $0.onStatus = { statuses.record($0) } }
        let request = Task { try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash())) }
        #expect(await statuses.wait(for: .touchNeeded))
        key.cancel()
        await #expect(throws: SecurityKeyError.cancelled) { try await request.value }
        #expect(await user.events.wait(for: .cancelled))
        #expect(
            server.log.last
                == "makeCredential options {rk: true, uv: true} pinUvAuthParam: absent -> CTAP2_ERR_KEEPALIVE_CANCEL (0x2d)"
        )
        // The key is usable afterwards.
        #expect(try await key.send(ctapCommand: [0x04]).first == 0)
        await key.close()
    }

    @Test func cancellingTheWaitingTaskCancelsTheRequest() async throws {
        let user = ScriptedUser(waits: true)
        let server = try await TestKey.start(user: user)
        defer { Task { await server.close() } }
        let key = try await Self.open(server)
        let make = Task { try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash())) }
        #expect(await user.events.wait(for: .asked))
        user.approve()
        let made = try MakeCredentialResponse(ctapResponse: try await make.value)
        let waiting = Task {
            try await key.send(
                ctapCommand: Ceremony.getAssertion(Ceremony.clientDataHash(), allowList: [made.credentialID]))
        }
        #expect(await user.events.wait(for: .asked, occurrences: 2))
        waiting.cancel()
        await #expect(throws: SecurityKeyError.cancelled) { try await waiting.value }
        #expect(await user.events.wait(for: .cancelled))
        await key.close()
    }

    @Test func aRequestThatOutlivesItsTimeLimitIsCancelledOnTheKey() async throws {
        let user = ScriptedUser(waits: true)
        let server = try await TestKey.start(user: user)
        defer { Task { await server.close() } }
        let key = try await Self.open(server)
        await #expect(throws: SecurityKeyError.timedOut(.milliseconds(300))) {
            try await key.send(
                ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash()), timeout: .milliseconds(300))
        }
        // The timeout sent CTAPHID_CANCEL: the authenticator stopped asking.
        #expect(await user.events.wait(for: .cancelled))
        // The next request gets a fresh channel and an answer.
        #expect(try await key.send(ctapCommand: [0x04]).first == 0)
        await key.close()
    }

    @Test func aSecondRequestWhileOneRunsIsRefused() async throws {
        let user = ScriptedUser(waits: true)
        let server = try await TestKey.start(user: user)
        defer { Task { await server.close() } }
        let key = try await Self.open(server)
        let first = Task { try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash())) }
        #expect(await user.events.wait(for: .asked))
        await #expect(throws: SecurityKeyError.busy) { try await key.send(ctapCommand: [0x04]) }
        await #expect(throws: SecurityKeyError.busy) { try await key.getInfo() }
        user.approve()
        #expect(try await first.value.first == 0)
        await key.close()
    }

    @Test func aKeyBusyWithAnotherProgramIsAskedAgain() async throws {
        let user = ScriptedUser(waits: true)
        let server = try await TestKey.start(user: user)
        defer { Task { await server.close() } }
        // Another program's request waits for the user, so the authenticator is busy for everybody.
        let other = try await CTAPHIDHostConnection.udp(host: "127.0.0.1", port: server.server.localAddress.port ?? 0)
        let otherRequest = Task {
            try await other.exchange(
                .cbor, payload: Ceremony.makeCredential(Ceremony.clientDataHash()), timeout: .seconds(30))
        }
        #expect(await user.events.wait(for: .asked))
        let statuses = Events<SecurityKeyStatus>()
        let key = try await Self.open(server) { $0.onStatus = { statuses.record($0) } }
        let getInfo = Task { try await key.getInfo() }
        #expect(await statuses.wait(for: .busyElsewhere, occurrences: 2))
        user.approve()
        #expect(try await otherRequest.value.first == 0)
        #expect(try await getInfo.value.versions == ["FIDO_2_0", "FIDO_2_1"])
        await key.close()
        await other.close()
    }

    @Test func aKeyBusyUntilTheTimeLimitTimesOut() async throws {
        let user = ScriptedUser(waits: true)
        let server = try await TestKey.start(user: user)
        defer { Task { await server.close() } }
        let other = try await CTAPHIDHostConnection.udp(host: "127.0.0.1", port: server.server.localAddress.port ?? 0)
        let otherRequest = Task {
            try await other.exchange(
                .cbor, payload: Ceremony.makeCredential(Ceremony.clientDataHash()), timeout: .seconds(30))
        }
        #expect(await user.events.wait(for: .asked))
        let key = try await Self.open(server)
        // Long enough for the first ERR_CHANNEL_BUSY to come back on a loaded machine.
        await #expect(throws: SecurityKeyError.keyBusy(.milliseconds(1500))) {
            try await key.send(ctapCommand: [0x04], timeout: .milliseconds(1500))
        }
        #expect("\(SecurityKeyError.keyBusy(.milliseconds(1500)))".contains("another program's request for 1.5 s"))
        user.approve()
        #expect(try await otherRequest.value.first == 0)
        await key.close()
        await other.close()
    }

    @Test func closingFailsTheRequestInProgress() async throws {
        let user = ScriptedUser(waits: true)
        let server = try await TestKey.start(user: user)
        defer { Task { await server.close() } }
        let key = try await Self.open(server)
        let request = Task { try await key.send(ctapCommand: Ceremony.makeCredential(Ceremony.clientDataHash())) }
        #expect(await user.events.wait(for: .asked))
        await key.close()
        await #expect(throws: SecurityKeyError.connection(.closed)) { try await request.value }
        await #expect(throws: SecurityKeyError.connection(.closed)) { try await key.send(ctapCommand: [0x04]) }
    }

    @Test func nothingListeningIsAClearError() async throws {
        // A port that was free a moment ago: nothing answers there, and the kernel says so.
        let probe = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(probe.localAddress?.port)
        try await probe.close()
        var options = SecurityKeyOptions()
        options.commandTimeout = .seconds(10)
        do {
            _ = try await SecurityKey.open(.udp(host: "127.0.0.1", port: port), options: options)
            Issue.record("opened a key where nothing listens")
        } catch {
            guard case .connection(.deviceFailed(_, let code)) = error else {
                Issue.record("unexpected error: \(error)")
                return
            }
            #expect(code == 111)  // ECONNREFUSED
            #expect("\(error)".contains("connection refused"))
        }
    }

    @Test func aDeviceThatNeverAnswersTimesOutOnOpen() async throws {
        let silent = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        defer { silent.close(promise: nil) }
        var options = SecurityKeyOptions()
        options.commandTimeout = .milliseconds(300)
        await #expect(throws: SecurityKeyError.timedOut(.milliseconds(300))) {
            _ = try await SecurityKey.open(
                .udp(host: "127.0.0.1", port: silent.localAddress?.port ?? 0), options: options)
        }
    }

    @Test func anAddressThatDoesNotResolveIsAClearError() async throws {
        await #expect {
            _ = try await SecurityKey.open(.udp(host: "no-such-host.invalid", port: 8111))
        } throws: { error in
            guard case .cannotConnect(let address, _) = error as? SecurityKeyError else { return false }
            return address == "udp:no-such-host.invalid:8111"
        }
    }
}
