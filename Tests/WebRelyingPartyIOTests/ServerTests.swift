import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import RelyingParty
@testable import WebRelyingPartyIO
import RelyingPartyTestSupport
import Synchronization
import TestSupport
import Testing
import WebRelyingParty

/// The state file under refusals and successes, and the server on a real socket.
@Suite(.timeLimit(.minutes(1)))
struct ServerTests {
    /// A service keeping its state in `file`, as `passkey rp serve` does.
    static func fileService(_ file: URL, lines: Recorder) throws -> RelyingPartyService {
        let stateFile = RelyingPartyStateFile(file)
        return RelyingPartyService(
            site: RelyingPartySite(
                relyingParty: WebRelyingParty(
                    configuration: .init(relyingParty: RelyingPartyEntity(id: "localhost"), origins: [Recorder.origin])),
                state: try stateFile.load()),
            environment: .stateFile(stateFile, printLine: { line in lines.lines.withLock { $0.append(line) } }))
    }

    static func post(_ service: RelyingPartyService, _ path: String, _ body: [UInt8]) -> RelyingPartySite.Response {
        service.handle(
            .init(method: "POST", target: path, host: "localhost", contentType: "application/json", body: body))
    }

    @Test func refusalsLeaveTheStateFileByteForByteAsItWas() throws {
        let directory = try TemporaryDirectory(prefix: "rp-server-tests")
        defer { directory.remove() }
        let file = directory.url("rp-state.json")
        let recorder = Recorder()
        let service = try Self.fileService(file, lines: recorder)
        var alice = SoftwareAuthenticator(origin: Recorder.origin)
        let options = Self.post(service, "/registration/options", Array(#"{"username":"alice"}"#.utf8)).body
        let registration = try alice.register(optionsJSON: options)
        #expect(Self.post(service, "/registration/verify", registration).status == 200)
        // The registration is a line of the journal beside the file, which is not there yet.
        let journal = RelyingPartyState.journalURL(for: file)
        let attributes = try FileManager.default.attributesOfItem(atPath: journal.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try RelyingPartyState.load(from: file) == service.state)
        let saved = [digest(of: file), try #require(digest(of: journal))]

        // Bad JSON.
        #expect(Self.post(service, "/registration/verify", Array("{not json".utf8)).status == 400)
        #expect(Self.post(service, "/authentication/verify", Array("{not json".utf8)).status == 400)
        // A replayed registration.
        #expect(Self.post(service, "/registration/verify", registration).status == 409)
        // An unknown credential.
        var stranger = SoftwareAuthenticator(origin: Recorder.origin)
        stranger.userHandle = alice.userHandle
        let unknown = try stranger.authenticate(
            optionsJSON: Self.post(service, "/authentication/options", Array("{}".utf8)).body)
        let unknownAnswer = Self.post(service, "/authentication/verify", unknown)
        #expect(unknownAnswer.status == 400)
        // A wrong origin, for both ceremonies.
        var spoil = SoftwareAuthenticator.Spoil()
        spoil.origin = "http://localhost:1"
        var bob = SoftwareAuthenticator(origin: Recorder.origin)
        let bobOptions = Self.post(service, "/registration/options", Array(#"{"username":"bob"}"#.utf8)).body
        #expect(
            Self.post(service, "/registration/verify", try bob.register(optionsJSON: bobOptions, spoil: spoil)).status
                == 400)
        let signIn = try alice.authenticate(
            optionsJSON: Self.post(service, "/authentication/options", Array(#"{"username":"alice"}"#.utf8)).body,
            spoil: spoil)
        #expect(Self.post(service, "/authentication/verify", signIn).status == 400)

        #expect([digest(of: file), digest(of: journal)] == saved)
        let lines = recorder.lines.withLock { $0 }
        #expect(lines.count == 7)
        #expect(
            lines.dropFirst().map { $0.split(separator: " ").prefix(4).joined(separator: " ") } == [
                "verdict registration refused code=badJSON", "verdict authentication refused code=badJSON",
                "verdict registration refused code=challengeReplayed",
                "verdict authentication refused code=unknownCredential",
                "verdict registration refused code=originMismatch",
                "verdict authentication refused code=originMismatch",
            ])
        #expect(lines.filter { $0.contains("code=originMismatch") }.allSatisfy { $0.contains("http://localhost:1") })
        // The state file written by the previous release reads back the same (shared with `passkey client`).
        #expect(try RelyingPartyState.load(from: file).accounts.map(\.userName) == ["alice"])
    }

    @Test func registerAndSignInOverARealSocket() async throws {
        let directory = try TemporaryDirectory(prefix: "rp-server-tests")
        defer { directory.remove() }
        let file = directory.url("state.json")
        let recorder = Recorder()
        var configuration = RelyingPartyServerConfiguration()
        configuration.port = 0
        let server = try await RelyingPartyServer.start(configuration) { (port) throws(RelyingPartyServerError) in
            let origins: Set<String>
            do {
                origins = try WebRelyingParty.Configuration.origins(
                    relyingPartyID: "localhost", explicit: [], port: port)
            } catch {
                throw .invalidConfiguration("\(error)")
            }
            return RelyingPartyService(
                site: RelyingPartySite(
                    relyingParty: WebRelyingParty(
                        configuration: .init(relyingParty: RelyingPartyEntity(id: "localhost"), origins: origins)),
                    state: RelyingPartyState()),
                environment: .stateFile(
                    RelyingPartyStateFile(file), printLine: { line in recorder.lines.withLock { $0.append(line) } }))
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { Task { await server.shutdown() } }
        #expect(server.port != 0 && server.baseURL == "http://127.0.0.1:\(server.port)")
        var key = SoftwareAuthenticator(origin: "http://localhost:\(server.port)")

        let page = try await RawHTTP.request(port: server.port, method: "GET", path: "/", group: group)
        #expect(page.status == 200 && String(decoding: page.body, as: UTF8.self).contains("<!doctype html>"))
        let options = try await RawHTTP.request(
            port: server.port, method: "POST", path: "/registration/options",
            json: Array(#"{"username":"alice","hints":["security-key"]}"#.utf8), group: group)
        #expect(options.status == 200)
        let registered = try await RawHTTP.request(
            port: server.port, method: "POST", path: "/registration/verify",
            json: try key.register(optionsJSON: options.body), group: group)
        #expect(registered.status == 200 && registered.json["verdict"] as? String == "ok")
        let request = try await RawHTTP.request(
            port: server.port, method: "POST", path: "/authentication/options", json: Array("{}".utf8), group: group)
        let signedIn = try await RawHTTP.request(
            port: server.port, method: "POST", path: "/authentication/verify",
            json: try key.authenticate(optionsJSON: request.body), group: group)
        #expect(signedIn.status == 200 && signedIn.json["user"] as? String == "alice")
        #expect(try RelyingPartyState.load(from: file).accounts.first?.credential.signCount == 1)
        let lines = recorder.lines.withLock { $0 }
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("verdict registration ok user=alice ") == true)
        #expect(lines.last?.hasPrefix("verdict authentication ok user=alice ") == true)
        await server.shutdown()
        try await group.shutdownGracefully()
    }

    /// Issue 23, attack 2: 64 idle connections locked everyone else out. At the limit a new connection takes the
    /// place of the one idle the longest (`ConnectionTableTests` has the rule, a connection in a request kept).
    @Test func anIdleConnectionMakesRoomForANewOne() async throws {
        var configuration = RelyingPartyServerConfiguration()
        configuration.port = 0
        configuration.maximumConnections = 1
        let recorder = Recorder()
        let server = try await RelyingPartyServer.start(configuration) { _ in recorder.service() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { Task { await server.shutdown() } }

        // An idle kept-alive connection (its request answered) makes room for a new one, which is served.
        let idle = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: server.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        try await idle.executeThenClose { inbound, outbound in
            var status: Int? = nil
            var answered: [UInt8] = []
            var iterator = inbound.makeAsyncIterator()
            for _ in 0..<100 where status == nil {
                try await outbound.write(ByteBuffer(string: "GET /credentials HTTP/1.1\r\nHost: localhost\r\n\r\n"))
                while status == nil, let buffer = try await iterator.next() {
                    answered += buffer.readableBytesView
                    status = try? HTTPAnswer.parse(answered).first?.status
                }
            }
            #expect(status == 200)
            let bytes = try await RawHTTP.exchange(
                port: server.port,
                bytes: Array("GET /credentials HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8),
                group: group)
            #expect(try HTTPAnswer.parse(bytes).first?.status == 200)
            // The idle connection was the one closed.
            #expect(try await iterator.next() == nil)
        }
        await server.shutdown()
        try await group.shutdownGracefully()
    }

    @Test func aServiceThatCannotBeMadeStopsTheStart() async throws {
        var configuration = RelyingPartyServerConfiguration()
        configuration.port = 0
        await #expect(throws: RelyingPartyServerError.invalidConfiguration("no")) {
            try await RelyingPartyServer.start(configuration) { (_) throws(RelyingPartyServerError) in
                throw .invalidConfiguration("no")
            }
        }
    }
}

/// The server's connection table, with embedded channels: which connection makes room at the limit.
struct ConnectionTableTests {
    static func connected() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    @Test func theConnectionIdleTheLongestMakesRoomAndOnesInARequestNever() throws {
        let table = ConnectionTable(maximum: 2)
        let start = ContinuousClock.now
        let (first, second, third, fourth) = (
            try Self.connected(), try Self.connected(), try Self.connected(), try Self.connected()
        )
        #expect(table.admit(first, now: start))
        #expect(table.admit(second, now: start + .seconds(1)))
        table.setBusy(first, true, now: start + .seconds(2))
        // At the limit: the idle one goes (the busy one is older but in a request).
        #expect(table.admit(third, now: start + .seconds(3)))
        #expect(!second.isActive && first.isActive && third.isActive)
        #expect(table.count == 2)
        // With both in a request, a new connection gets no place and nothing is closed.
        table.setBusy(third, true, now: start + .seconds(4))
        #expect(!table.admit(fourth, now: start + .seconds(5)))
        #expect(first.isActive && third.isActive && table.count == 2)
        // A request answered makes its connection idle again, from then on.
        table.setBusy(first, false, now: start + .seconds(6))
        #expect(table.admit(fourth, now: start + .seconds(7)))
        #expect(!first.isActive && third.isActive)
        table.remove(third)
        #expect(table.count == 1)
    }
}
