import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import RelyingParty
import RelyingPartyTestSupport
import Synchronization
import Testing
import WebRelyingParty

@testable import WebRelyingPartyIO

/// The HTTP adapter in `EmbeddedChannel`: request parts in, response parts out; then the whole pipeline from raw
/// bytes, with its limits and its idle timeout.
struct HandlerTests {
    let recorder = Recorder()

    func handlerChannel(maximumBodyBytes: Int = 64 * 1024) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            RelyingPartyHTTPHandler(
                service: recorder.service(), maximumBodyBytes: maximumBodyBytes, idleTimeout: .seconds(30)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    /// A request head with `Host: localhost:8787` (as a browser sends it) before `headers`.
    func head(_ method: HTTPMethod, _ uri: String, _ headers: [(String, String)] = []) -> HTTPServerRequestPart {
        .head(
            HTTPRequestHead(
                version: .http1_1, method: method, uri: uri,
                headers: HTTPHeaders([("Host", "localhost:8787")] + headers)))
    }

    func body(_ text: String) -> HTTPServerRequestPart { .body(ByteBuffer(string: text)) }

    @Test func answersTheRoutesAndKeepsTheConnectionAlive() throws {
        let channel = try handlerChannel()
        try channel.writeInbound(head(.GET, "/?auto=sign-in"))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        let page = try #require(try channel.readResponseParts())
        #expect(page.status == 200)
        #expect(page.headers.first(name: "Content-Type") == "text/html; charset=utf-8")
        #expect(page.headers.first(name: "Content-Length") == String(page.body.count))
        #expect(page.headers.first(name: "Connection") == "keep-alive")
        #expect(page.headers.first(name: "Content-Security-Policy")?.hasPrefix("default-src 'none'") == true)

        try channel.writeInbound(head(.POST, "/registration/options", [("Content-Type", "application/json")]))
        try channel.writeInbound(body(#"{"username":"#))
        try channel.writeInbound(body(#""alice"}"#))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        let options = try #require(try channel.readResponseParts())
        #expect(options.status == 200)
        #expect((options.json["user"] as? [String: Any])?["name"] as? String == "alice")
        #expect(channel.isActive)

        try channel.writeInbound(head(.GET, "/nowhere", [("Connection", "close")]))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        let missing = try #require(try channel.readResponseParts())
        #expect(missing.status == 404 && missing.json["error"] as? String == "notFound")
        #expect(missing.headers.first(name: "Connection") == "close")
        #expect(!channel.isActive)
    }

    /// The server's connection table learns when a request starts (its head is read) and when it is answered.
    @Test func theRequestStateIsReportedAtTheHeadAndAtTheAnswer() throws {
        let changes = Mutex<[Bool]>([])
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            RelyingPartyHTTPHandler(
                service: recorder.service(), maximumBodyBytes: 1000, idleTimeout: .seconds(30),
                requestStateChanged: { busy in changes.withLock { $0.append(busy) } }))
        try channel.writeInbound(head(.POST, "/registration/options", [("Content-Type", "application/json")]))
        #expect(changes.withLock { $0 } == [true])
        try channel.writeInbound(body(#"{"username":"alice"}"#))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        #expect(changes.withLock { $0 } == [true, false])
    }

    /// The handler hands the `Host` header to the site, which refuses a name it does not serve (DNS rebinding).
    @Test func aRequestForAnotherHostIsRefusedWith421() throws {
        let channel = try handlerChannel()
        try channel.writeInbound(
            HTTPServerRequestPart.head(
                HTTPRequestHead(
                    version: .http1_1, method: .GET, uri: "/credentials",
                    headers: HTTPHeaders([("Host", "rebound.example:8787")]))))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        let answer = try #require(try channel.readResponseParts())
        #expect(answer.status == 421 && answer.json["error"] as? String == "misdirectedRequest")
    }

    @Test func aDeclaredBodyOverTheLimitIsRefusedAtOnce() throws {
        let channel = try handlerChannel(maximumBodyBytes: 100)
        try channel.writeInbound(
            head(.POST, "/registration/verify", [("Content-Type", "application/json"), ("Content-Length", "101")]))
        let answer = try #require(try channel.readResponseParts())
        #expect(answer.status == 413 && answer.json["error"] as? String == "payloadTooLarge")
        #expect(!channel.isActive)
        #expect(recorder.lines.withLock { $0 }.isEmpty)
    }

    @Test func aStreamedBodyOverTheLimitIsRefusedWhenItCrossesIt() throws {
        let channel = try handlerChannel(maximumBodyBytes: 100)
        try channel.writeInbound(
            head(
                .POST, "/registration/verify", [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")])
        )
        try channel.writeInbound(body(String(repeating: " ", count: 100)))
        #expect(try channel.readResponseParts() == nil)
        try channel.writeInbound(body(" "))
        let answer = try #require(try channel.readResponseParts())
        #expect(answer.status == 413)
        #expect(!channel.isActive)
    }

    @Test func aBodyAtTheLimitIsRead() throws {
        let channel = try handlerChannel(maximumBodyBytes: 100)
        let json = #"{"username":"alice"}"#
        try channel.writeInbound(head(.POST, "/registration/options", [("Content-Type", "application/json")]))
        try channel.writeInbound(body(json + String(repeating: " ", count: 100 - json.utf8.count)))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        #expect(try channel.readResponseParts()?.status == 200)
    }

    /// A client that sends a head and then drips its body, one byte within every idle timeout, is busy for the
    /// connection table and would hold its place for ever: the request timeout answers it 408 and closes.
    @Test func aRequestDrippingItsBodyIsAnswered408AtTheRequestTimeout() throws {
        let channel = try handlerChannel()
        let loop = try #require(channel.eventLoop as? EmbeddedEventLoop)
        try channel.writeInbound(
            head(
                .POST, "/registration/options",
                [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]
            ))
        for _ in 0..<9 {
            try channel.writeInbound(body(" "))
            loop.advanceTime(by: .seconds(1))
        }
        #expect(channel.isActive)
        #expect(try channel.readResponseParts() == nil)
        try channel.writeInbound(body(" "))
        loop.advanceTime(by: .seconds(1))
        let answer = try #require(try channel.readResponseParts())
        #expect(answer.status == 408 && answer.json["error"] as? String == "requestTimeout")
        #expect(answer.headers.first(name: "Connection") == "close")
        #expect(!channel.isActive)
        #expect(recorder.lines.withLock { $0 }.isEmpty)
    }

    /// A request that arrives whole in time leaves no timer behind: the keep-alive connection lives on.
    @Test func aRequestAnsweredInTimeLeavesNoRequestTimerBehind() throws {
        let channel = try handlerChannel()
        let loop = try #require(channel.eventLoop as? EmbeddedEventLoop)
        try channel.writeInbound(head(.GET, "/credentials"))
        loop.advanceTime(by: .seconds(9))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        #expect(try channel.readResponseParts()?.status == 200)
        loop.advanceTime(by: .seconds(20))
        #expect(channel.isActive)
        #expect(try channel.readResponseParts() == nil)
    }

    @Test func aConnectionIsClosedWhenNoRequestPartArrivesForTheIdleTimeout() throws {
        let channel = try handlerChannel()
        let loop = try #require(channel.eventLoop as? EmbeddedEventLoop)
        loop.advanceTime(by: .seconds(29))
        try channel.writeInbound(head(.GET, "/credentials"))
        loop.advanceTime(by: .seconds(9))  // within the request timeout
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        #expect(try channel.readResponseParts()?.status == 200)
        loop.advanceTime(by: .seconds(29))
        #expect(channel.isActive)  // every part restarted the timer
        loop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    // MARK: The whole pipeline, from bytes

    func pipelineChannel(_ configure: (inout RelyingPartyServerConfiguration) -> Void = { _ in }) throws
        -> EmbeddedChannel
    {
        var configuration = RelyingPartyServerConfiguration()
        configure(&configuration)
        let channel = EmbeddedChannel()
        try RelyingPartyServer.configure(channel, service: recorder.service(), configuration: configuration)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let channel = try pipelineChannel()
        let json = #"{"username":"alice"}"#
        try channel.writeInbound(
            ByteBuffer(
                string: "GET /credentials HTTP/1.1\r\nHost: localhost\r\n\r\n"
                    + "POST /registration/options HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(json.utf8.count)\r\n\r\n\(json)"
                    + "GET /favicon.ico HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        let answers = try channel.readResponseBytes()
        #expect(answers.map(\.status) == [200, 200, 204])
        #expect(answers.first?.json["rpId"] as? String == "localhost")
        #expect(answers.dropFirst().first?.json["challenge"] is String)
    }

    @Test(arguments: [
        ("GARBAGE\r\n\r\n", 400, "badRequest"),
        ("GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: nope\r\n\r\n", 400, "badRequest"),
        (
            "GET / HTTP/1.1\r\n" + (0..<70).map { "X-Header-\($0): v\r\n" }.joined() + "\r\n", 431,
            "headersTooLarge"
        ),
        ("GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 20_000) + "\r\n\r\n", 431, "headersTooLarge"),
    ])
    func unreadableRequestsGetAJSONRefusalAndAClose(request: String, status: Int, code: String) throws {
        let channel = try pipelineChannel()
        do {
            try channel.writeInbound(ByteBuffer(string: request))
        } catch {
            // The decoder's error is also thrown out of the embedded pipeline; the answer is what matters.
        }
        let answers = try channel.readResponseBytes()
        #expect(answers.count == 1)
        #expect(answers.first?.status == status)
        #expect(answers.first?.json["error"] as? String == code)
        #expect(answers.first?.headers.first(name: "Connection") == "close")
        #expect(!channel.isActive)
    }

    @Test func aRequestHeadDrippedSlowerThanTheIdleTimeoutIsCutOff() throws {
        let channel = try pipelineChannel { $0.idleTimeout = .seconds(30) }
        let loop = try #require(channel.eventLoop as? EmbeddedEventLoop)
        for piece in ["GET /cre", "dentials HTTP/1.1\r\n", "Host: local"] {
            try channel.writeInbound(ByteBuffer(string: piece))
            loop.advanceTime(by: .seconds(10))
        }
        #expect(!channel.isActive)
        #expect(try channel.readResponseBytes().isEmpty)
    }

    // MARK: The service

    @Test func aStateThatCannotBeSavedIsNotKeptAndTheAnswerSaysSo() throws {
        recorder.failSaving.withLock { $0 = true }
        let service = recorder.service()
        var key = SoftwareAuthenticator(origin: Recorder.origin)
        let options = service.handle(
            .init(
                method: "POST", target: "/registration/options", host: "localhost", contentType: "application/json",
                body: Array(#"{"username":"alice"}"#.utf8)))
        let answer = service.handle(
            .init(
                method: "POST", target: "/registration/verify", host: "localhost", contentType: "application/json",
                body: try key.register(optionsJSON: options.body)))
        #expect(answer.status == 500)
        #expect(service.state.accounts.isEmpty)
        let lines = recorder.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("verdict registration refused code=stateNotSaved user=alice reason=") == true)
        #expect(lines.first?.contains("disk full") == true)
    }

    @Test func aSavedStateIsKeptAndItsLinePrintedOnce() throws {
        let service = recorder.service()
        var key = SoftwareAuthenticator(origin: Recorder.origin)
        let options = service.handle(
            .init(
                method: "POST", target: "/registration/options", host: "localhost", contentType: "application/json",
                body: Array(#"{"username":"alice"}"#.utf8)))
        let answer = service.handle(
            .init(
                method: "POST", target: "/registration/verify", host: "localhost", contentType: "application/json",
                body: try key.register(optionsJSON: options.body)))
        #expect(answer.status == 200)
        #expect(service.state.accounts.map(\.userName) == ["alice"])
        #expect(recorder.saved.withLock { $0 } == [service.state])
        #expect(recorder.lines.withLock { $0 }.count == 1)
    }
}
