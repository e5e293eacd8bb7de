import Foundation
import NIOCore
import NIOPosix
import RelyingParty
import WebRelyingPartyIO
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
        RelyingPartyService(
            site: RelyingPartySite(
                relyingParty: WebRelyingParty(
                    configuration: .init(relyingParty: RelyingPartyEntity(id: "localhost"), origins: [Recorder.origin])),
                state: try RelyingPartyState.load(from: file)),
            environment: .stateFile(file, printLine: { line in lines.lines.withLock { $0.append(line) } }))
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
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try RelyingPartyState.load(from: file) == service.state)
        let saved = try #require(digest(of: file))

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

        #expect(digest(of: file) == saved)
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
                environment: .stateFile(file, printLine: { line in recorder.lines.withLock { $0.append(line) } }))
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

    @Test func connectionsOverTheLimitAreClosedAtOnce() async throws {
        var configuration = RelyingPartyServerConfiguration()
        configuration.port = 0
        configuration.maximumConnections = 1
        let recorder = Recorder()
        let server = try await RelyingPartyServer.start(configuration) { _ in recorder.service() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { Task { await server.shutdown() } }

        // One kept-alive connection holds the only place.
        let first = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: server.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        try await first.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "GET /credentials HTTP/1.1\r\nHost: localhost\r\n\r\n"))
            var received: [UInt8] = []
            for try await buffer in inbound {
                received += buffer.readableBytesView
                if let answers = try? HTTPAnswer.parse(received), !answers.isEmpty { break }
            }
            #expect(try HTTPAnswer.parse(received).first?.status == 200)
            let refused = try await RawHTTP.exchange(
                port: server.port, bytes: Array("GET /credentials HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8),
                group: group)
            #expect(refused.isEmpty)
        }
        // With the first closed, a new connection is served (the close is noticed asynchronously).
        var status: Int? = nil
        for _ in 0..<100 where status == nil {
            let bytes = try await RawHTTP.exchange(
                port: server.port,
                bytes: Array("GET /credentials HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8),
                group: group)
            status = try HTTPAnswer.parse(bytes).first?.status
            if status == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(status == 200)
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
