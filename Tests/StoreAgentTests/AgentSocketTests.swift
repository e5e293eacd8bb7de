import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import StoreAgent
import StoreAgentIO
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The agent on a real Unix socket in a temporary directory: who it serves, what it answers, and that the store key
/// never leaves it.
@Suite(.serialized)
struct AgentSocketTests {
    static let passphrase = "correct horse battery"

    /// A store, an agent serving it on a thread, and a clock the test moves.
    final class Fixture: Sendable {
        let directory: TemporaryDirectory
        let store: URL
        let server: AgentServer
        let clock = ManualClock()
        let socketPath: String

        init(allowedUser: uid_t = getuid()) throws {
            directory = try TemporaryDirectory(prefix: "agent")
            store = directory.url("passkeys.sqlite")
            try SQLiteCredentialStore.create(at: store, passphrase: AgentSocketTests.passphrase, kdf: .testing).close()
            socketPath = try AgentSocket.path(environment: ["XDG_RUNTIME_DIR": directory.path])
            let clock = self.clock
            let start = clock.now
            server = try AgentServer(
                options: .init(
                    socketPath: socketPath, allowedUser: allowedUser, readTimeout: .seconds(1),
                    clock: { clock.now - start }))
            let server = server
            Thread.detachNewThread { server.run() }
        }

        var client: AgentClient { AgentClient(socketPath: socketPath) }
        var storePath: String { store.path }

        func unlock(_ passphrase: String = AgentSocketTests.passphrase, idle: Duration = .seconds(60)) throws
            -> AgentReply
        {
            try client.send(.unlock(store: storePath, passphrase: Array(passphrase.utf8), idle: idle))
        }

        /// Sends `bytes` as they are and returns every byte the agent sent back until it closed the connection.
        func raw(_ bytes: [UInt8]) throws -> [UInt8] {
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socketPath.utf8) + [0]) }
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            try #require(connected == 0)
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(fd, Int32(SHUT_WR))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                received += buffer[0..<count]
            }
            return received
        }

        deinit { server.stop() }
    }

    @Test func theSocketIsPrivateAndTheProcessUndumpable() throws {
        let fixture = try Fixture()
        var status = stat()
        try #require(stat(fixture.socketPath, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        try #require(stat((fixture.socketPath as NSString).deletingLastPathComponent, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o700)
        #expect(readDumpable() == 0)
        #expect(try fixture.unlock() == .done)
        #expect(lockedKilobytes() > 0)
    }

    @Test func withoutARuntimeDirectoryThereIsNoSocketAndTheErrorSaysWhy() {
        #expect(throws: AgentError.self) { try AgentSocket.path(environment: [:]) }
        let message = (try? AgentSocket.path(environment: ["XDG_RUNTIME_DIR": "relative"])).map { _ in "" }
        #expect(message == nil)
    }

    @Test func aStoreOpensThroughTheAgentAndTheKeyNeverCrossesTheSocket() throws {
        let fixture = try Fixture()
        #expect(try fixture.client.send(.status(store: fixture.storePath)) == .notHeld)
        #expect(try fixture.unlock("wrong one") == .wrongPassphrase)
        #expect(try fixture.unlock() == .done)
        guard case .held(_, let sinceUnlock) = try fixture.client.send(.status(store: fixture.storePath)) else {
            Issue.record("the key is not held after unlock")
            return
        }
        // Just unlocked: the agent says so (consent without a terminal counts on it).
        let since = try #require(sinceUnlock)
        #expect(since >= .zero && since < .seconds(30))
        // A store opened through the agent reads and writes as one opened with the passphrase.
        let keyring = AgentKeyring(client: fixture.client, store: fixture.storePath)
        let store = try SQLiteCredentialStore.open(at: fixture.store, keyring: keyring)
        let credential = StoredCredential(
            id: [1, 2, 3, 4], relyingPartyID: "example.com", userHandle: [9],
            privateKey: P256.Signing.PrivateKey(), isDiscoverable: true, backupEligible: true, backupState: true,
            creationDate: Date(timeIntervalSince1970: 1))
        try store.save(credential)
        #expect(store.verifyPassphrase(Self.passphrase))
        #expect(!store.verifyPassphrase("wrong one"))
        store.close()
        let direct = try SQLiteCredentialStore.open(at: fixture.store, passphrase: Self.passphrase)
        #expect(
            try direct.credential(id: [1, 2, 3, 4])?.privateKey.rawRepresentation
                == credential.privateKey.rawRepresentation)
        direct.close()

        // No reply, to any request, holds the store key or a key derived from it.
        let key = try SQLiteCredentialStore.storeKey(at: fixture.store, passphrase: Self.passphrase)
        let secrets = [key.withUnsafeBytes { Array($0) }] + derivedKeys(of: key)
        var replies: [[UInt8]] = []
        for request: AgentRequest in [
            .status(store: fixture.storePath),
            .unlock(store: fixture.storePath, passphrase: Array(Self.passphrase.utf8), idle: .seconds(60)),
            .seal(store: fixture.storePath, use: 1, aad: [], bytes: []),
            .open(store: fixture.storePath, use: 1, aad: [], bytes: Array(repeating: 0, count: 28)),
            .authenticate(store: fixture.storePath, use: 2, bytes: []),
            .seal(store: fixture.storePath, use: 3, aad: [1], bytes: Array(repeating: 0, count: 32)),
        ] {
            replies.append(try fixture.raw(AgentCodec.frame(AgentCodec.encode(request))))
        }
        for reply in replies {
            #expect(reply.count > 4)
            for secret in secrets { #expect(!contains(reply, secret)) }
        }
    }

    @Test func theKeyIsForgottenOnTimeoutAndOnLock() throws {
        let fixture = try Fixture()
        #expect(try fixture.unlock(idle: .seconds(60)) == .done)
        let seal = AgentRequest.seal(store: fixture.storePath, use: 1, aad: [], bytes: [1])
        fixture.clock.advance(by: .seconds(59))
        guard case .bytes = try fixture.client.send(seal) else {
            Issue.record("the key was forgotten before its time")
            return
        }
        fixture.clock.advance(by: .seconds(61))
        #expect(try fixture.client.send(seal) == .notHeld)

        #expect(try fixture.unlock() == .done)
        #expect(try fixture.client.send(.lock(store: nil)) == .done)
        #expect(try fixture.client.send(seal) == .notHeld)
        // A store opened through the agent fails with a sentence once the key is gone, not with damaged rows.
        #expect(throws: CredentialStoreError.self) {
            try SQLiteCredentialStore.open(
                at: fixture.store, keyring: AgentKeyring(client: fixture.client, store: fixture.storePath))
        }
    }

    @Test func hostileClientsGetAnErrorAndTheAgentKeepsServing() throws {
        let fixture = try Fixture()
        #expect(try fixture.unlock() == .done)
        let hostile: [[UInt8]] = [
            [0xFF, 0xFF, 0xFF, 0xFF] + Array(repeating: 0x41, count: 64),  // 4 GiB announced
            [0, 0, 0, 3, 9, 9, 9],  // a frame that is not a message
            [0, 0, 0, 10, 1],  // a frame cut short
            AgentCodec.frame([1, 4] + [0, 0, 0, 2] + Array("/s".utf8)),  // a seal with one field
        ]
        for bytes in hostile {
            let reply = try fixture.raw(bytes)
            let length = try AgentCodec.frameLength(Array(reply.prefix(4)))
            guard case .refused = try AgentCodec.decodeReply(Array(reply.dropFirst(4).prefix(length))) else {
                Issue.record("a hostile message was not refused")
                continue
            }
        }
        // A client that connects and says nothing holds up nobody, and is dropped after the read timeout.
        let silent = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(fixture.socketPath.utf8) + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(silent, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(connected == 0)
        guard case .bytes = try fixture.client.send(.seal(store: fixture.storePath, use: 1, aad: [], bytes: [1]))
        else {
            Issue.record("the agent stopped serving after hostile clients")
            return
        }
        var buffer = [UInt8](repeating: 0, count: 16)
        let ended = Date()
        let read = buffer.withUnsafeMutableBytes { recv(silent, $0.baseAddress, $0.count, 0) }
        #expect(read == 0)  // closed by the agent, without a reply
        #expect(Date().timeIntervalSince(ended) < 3)
    }

    @Test func anotherUserIsRefused() throws {
        let fixture = try Fixture(allowedUser: getuid() &+ 1)
        guard case .refused(let reason) = try fixture.client.send(.status(store: fixture.storePath)) else {
            Issue.record("a connection from another user was served")
            return
        }
        #expect(reason.contains("own user"))
    }

    @Test func aSecondAgentOnTheSameSocketIsRefused() throws {
        let fixture = try Fixture()
        #expect(throws: AgentError.self) { try AgentServer(options: .init(socketPath: fixture.socketPath)) }
    }

    private func derivedKeys(of key: StoreKey) -> [[UInt8]] {
        key.withUnsafeBytes { raw in
            let symmetric = SymmetricKey(data: raw)
            return ["passkey-store settings MAC key v3", "passkey phone links v1", "passkey computer links v1"].map {
                HKDF<SHA256>.deriveKey(inputKeyMaterial: symmetric, info: Array($0.utf8), outputByteCount: 32)
                    .withUnsafeBytes { Array($0) }
            }
        }
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    private func readDumpable() -> Int { AgentServer.isDumpable ? 1 : 0 }

    private func lockedKilobytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmLck:") })
        else { return 0 }
        return line.split(separator: " ").compactMap { Int($0) }.first ?? 0
    }
}
