import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PublicSuffix
import Synchronization
import TestSupport
import Testing
import WebAuthnClient
import WebAuthnClientIO

/// The real fetch against a local HTTPS server whose certificate a test CA (TestSupport's, made with `openssl`)
/// signed for `localhost`: the RP ID is `localhost`, the port the server's.
struct HTTPSRelatedOriginsSourceTests {
    static let list = try! PublicSuffixList(text: "com\nde\nco.uk\n")
    static let rpID = try! DomainName("localhost")
    static let listed = #"{"origins": ["https://shop.example.de", "https://example.co.uk"]}"#

    static func source(_ ca: TestCA, _ server: WellKnownServer, timeout: Duration = .seconds(10))
        -> HTTPSRelatedOriginsSource
    {
        HTTPSRelatedOriginsSource(additionalCAFile: ca.caCertificate, port: server.port, timeout: timeout)
    }

    @Test func aJSONDocumentIsFetchedWithoutCredentialsOrReferrer() async throws {
        let ca = try await TestCA.make()
        try await WellKnownServer.with(ca, reply: { _ in .init(body: Self.listed) }) { server in
            let response = try await Self.source(ca, server).wellKnownResponse(for: Self.rpID)
            #expect(response.status == 200)
            #expect(response.contentType == "application/json")
            #expect(try RelatedOrigins.origins(in: response) == ["https://shop.example.de", "https://example.co.uk"])
            let request = try #require(server.requests.first)
            #expect(request.uri == "/.well-known/webauthn")
            #expect(request.method == .GET)
            #expect(request.headers["Host"] == ["localhost:\(server.port)"])
            for header in ["Cookie", "Referer", "Authorization", "Origin"] {
                #expect(!request.headers.contains(name: header), "sent \(header)")
            }

            // The whole decision: shop.example.de is no suffix of localhost, but localhost lists it.
            let verdict = await RelyingPartyIDCheck.evaluate(
                origin: try WebOrigin(url: "https://shop.example.de"), rpID: "localhost", list: Self.list,
                relatedOrigins: Self.source(ca, server))
            #expect(verdict.valid, "\(verdict.reason)")
            #expect(verdict.rule == .relatedOrigin)
            let refused = await RelyingPartyIDCheck.evaluate(
                origin: try WebOrigin(url: "https://other.example.de"), rpID: "localhost", list: Self.list,
                relatedOrigins: Self.source(ca, server))
            #expect(!refused.valid)
            #expect(refused.rule == .relatedOriginsRefused)
        }
    }

    @Test(arguments: [301, 302, 307, 308])
    func aRedirectIsNotFollowed(status: Int) async throws {
        let ca = try await TestCA.make()
        let reply: @Sendable (HTTPRequestHead) -> WellKnownServer.Reply? = { head in
            head.uri == "/elsewhere"
                ? .init(body: Self.listed)
                : .init(status: status, headers: [("Location", "/elsewhere")], body: "moved")
        }
        try await WellKnownServer.with(ca, reply: reply) { server in
            let response = try await Self.source(ca, server).wellKnownResponse(for: Self.rpID)
            #expect(response.status == status)
            #expect(throws: RelatedOriginsError(.status, "")) { try RelatedOrigins.origins(in: response) }
            #expect(server.requests.map(\.uri) == ["/.well-known/webauthn"])
        }
    }

    @Test func theWrongContentTypeIsRefused() async throws {
        let ca = try await TestCA.make()
        try await WellKnownServer.with(
            ca, reply: { _ in .init(headers: [("Content-Type", "text/plain")], body: Self.listed) }
        ) {
            server in
            let response = try await Self.source(ca, server).wellKnownResponse(for: Self.rpID)
            #expect(response.contentType == "text/plain")
            #expect(throws: RelatedOriginsError(.contentType, "")) { try RelatedOrigins.origins(in: response) }
        }
    }

    @Test func anOversizeBodyIsRefusedByItsLength() async throws {
        let ca = try await TestCA.make()
        let big = #"{"origins": []}"# + String(repeating: " ", count: RelatedOrigins.maximumDocumentSize)
        try await WellKnownServer.with(ca, reply: { _ in .init(body: big) }) { server in
            await #expect(throws: RelatedOriginsError(.tooLarge, "")) {
                try await Self.source(ca, server).wellKnownResponse(for: Self.rpID)
            }
        }
    }

    @Test func anOversizeBodyIsRefusedAsItStreams() async throws {
        // No Content-Length: chunked, 4 KiB a chunk, past the limit; the fetch stops reading.
        let ca = try await TestCA.make()
        let big = String(repeating: " ", count: 4 * RelatedOrigins.maximumDocumentSize)
        try await WellKnownServer.with(ca, reply: { _ in .init(body: big, chunked: true) }) { server in
            await #expect(throws: RelatedOriginsError(.tooLarge, "")) {
                try await Self.source(ca, server).wellKnownResponse(for: Self.rpID)
            }
        }
    }

    @Test func anUntrustedCertificateIsRefused() async throws {
        let ca = try await TestCA.make()
        try await WellKnownServer.with(ca, reply: { _ in .init(body: Self.listed) }) { server in
            await #expect(throws: RelatedOriginsError(.fetchFailed, "")) {
                try await HTTPSRelatedOriginsSource(port: server.port).wellKnownResponse(for: Self.rpID)
            }
            #expect(server.requests.isEmpty)
        }
    }

    @Test func aSilentServerTimesOut() async throws {
        let ca = try await TestCA.make()
        try await WellKnownServer.with(ca, reply: { _ in nil }) { server in
            let started = ContinuousClock.now
            await #expect(throws: RelatedOriginsError(.fetchFailed, "")) {
                try await Self.source(ca, server, timeout: .seconds(1)).wellKnownResponse(for: Self.rpID)
            }
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }

    /// Issue 23, attack 6: the 10 s bound covered only the response head, so a server dripping one byte every 4 s
    /// held one check for 106 s. Here a byte every 300 ms (each read well inside the bound) for 100 bytes would take
    /// 30 s; the fetch's whole deadline of 1 s ends it.
    @Test func aServerDrippingTheBodyIsCutOffAtTheWholeDeadline() async throws {
        let ca = try await TestCA.make()
        var reply = WellKnownServer.Reply(body: String(repeating: " ", count: 100))
        reply.drip = .milliseconds(300)
        try await WellKnownServer.with(ca, reply: { [reply] _ in reply }) { server in
            let started = ContinuousClock.now
            let error = await #expect(throws: RelatedOriginsError.self) {
                try await Self.source(ca, server, timeout: .seconds(1)).wellKnownResponse(for: Self.rpID)
            }
            #expect(error?.code == .fetchFailed)
            #expect(ContinuousClock.now - started < .seconds(10), "the drip was read to its end")
        }
    }

    /// Issue 24: a failed fetch said "connection reset (error set): Connection refused) (errno: 111)" or dumped
    /// BoringSSL's errors, and `domains check` retried for 21 s whatever the cause. Each failure is now named in a
    /// person's terms, and only a time-out (or a dropped connection) counts as worth retrying.
    @Test func aFailedFetchSaysWhyInAPersonsTerms() async throws {
        let ca = try await TestCA.make()
        let fetcher = HTTPSFetcher(connectTimeout: .seconds(15), timeout: .seconds(20))
        func failure(_ url: String) async -> HTTPSFetchError? {
            await #expect(throws: HTTPSFetchError.self) {
                _ = try await fetcher.get(url, accept: "application/json", userAgent: "test", limit: 1024)
            }
        }
        var seen: [HTTPSFetchError] = []
        try await WellKnownServer.with(ca, reply: { _ in .init(body: Self.listed) }) { server in
            let untrusted = await failure("https://localhost:\(server.port)/x")
            #expect(untrusted?.failure == .certificate)
            #expect(untrusted?.description.contains("certificate") == true, "\(untrusted?.description ?? "")")
            seen += untrusted.map { [$0] } ?? []
        }
        try await WellKnownServer.with(ca, reply: { _ in nil }) { server in
            let silent = await failure("https://localhost:\(server.port)/x")
            #expect(silent?.failure == .certificate || silent?.failure == .timedOut)
        }
        let closed = try await WellKnownServer.start(ca) { _ in .init(body: Self.listed) }
        let port = closed.port
        await closed.stop()
        let refused = await failure("https://127.0.0.1:\(port)/x")
        #expect(refused?.failure == .refused)
        #expect(refused?.description.contains("was refused") == true)
        let unresolved = await failure("https://no-such-host.invalid/x")
        #expect(unresolved?.failure == .unresolved, "\(unresolved?.description ?? "")")
        seen += [refused, unresolved].compactMap { $0 }
        for error in seen {
            #expect(!error.failure.isTransient)
            for word in ["errno", "NIO", "BoringSSL", "Error", "/work/", ".swift"] {
                #expect(!error.description.contains(word), "\(error.description)")
            }
        }
    }

    @Test func nothingListeningFailsTheFetch() async throws {
        let ca = try await TestCA.make()
        let server = try await WellKnownServer.start(ca) { _ in .init(body: Self.listed) }
        let port = server.port
        await server.stop()
        await #expect(throws: RelatedOriginsError(.fetchFailed, "")) {
            try await HTTPSRelatedOriginsSource(additionalCAFile: ca.caCertificate, port: port).wellKnownResponse(
                for: Self.rpID)
        }
    }
}

/// An HTTPS server on 127.0.0.1 that answers every request with what `reply` says (nil: never answer).
final class WellKnownServer: Sendable {
    struct Reply: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        var chunked: Bool
        /// Sends the body one byte at a time with this pause before each, as a slow-drip attack does.
        var drip: Duration?

        init(status: Int = 200, headers: [(String, String)]? = nil, body: String, chunked: Bool = false) {
            self.init(status: status, headers: headers, bytes: Array(body.utf8), chunked: chunked)
        }

        init(status: Int = 200, headers: [(String, String)]? = nil, bytes: [UInt8], chunked: Bool = false) {
            self.status = status
            self.headers = headers ?? [("Content-Type", "application/json")]
            self.body = bytes
            self.chunked = chunked
        }
    }

    private let channel: any Channel
    private let log: RequestLog
    let port: Int

    /// The requests the server has read, in order.
    var requests: [HTTPRequestHead] { log.heads.withLock { $0 } }

    private init(channel: any Channel, log: RequestLog) {
        self.channel = channel
        self.log = log
        self.port = channel.localAddress?.port ?? 0
    }

    /// Runs `body` with a server started for it, and stops the server afterwards.
    @discardableResult
    static func with<Result>(
        _ ca: TestCA, reply: @escaping @Sendable (HTTPRequestHead) -> Reply?,
        _ body: (WellKnownServer) async throws -> Result
    ) async throws -> Result {
        let server = try await start(ca, reply: reply)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    static func start(_ ca: TestCA, reply: @escaping @Sendable (HTTPRequestHead) -> Reply?) async throws
        -> WellKnownServer
    {
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(ca.certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: ca.privateKey, format: .pem)))
        let context = try NIOSSLContext(configuration: configuration)
        let log = RequestLog()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Responder(reply: reply, log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return WellKnownServer(channel: channel, log: log)
    }

    func stop() async { try? await channel.close() }

    /// The requests, shared by the server and its connections' handlers.
    final class RequestLog: Sendable {
        let heads = Mutex<[HTTPRequestHead]>([])
    }

    final class Responder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let reply: @Sendable (HTTPRequestHead) -> Reply?
        let log: RequestLog
        private var head: HTTPRequestHead?

        init(reply: @escaping @Sendable (HTTPRequestHead) -> Reply?, log: RequestLog) {
            self.reply = reply
            self.log = log
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch Self.unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body: break
            case .end:
                guard let head else { return }
                log.heads.withLock { $0.append(head) }
                guard let answer = reply(head) else { return }
                var headers = HTTPHeaders(answer.headers)
                headers.add(name: "Connection", value: "close")
                if !answer.chunked { headers.add(name: "Content-Length", value: String(answer.body.count)) }
                let responseHead = HTTPResponseHead(
                    version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status), headers: headers)
                if let drip = answer.drip {
                    context.writeAndFlush(Self.wrapOutboundOut(.head(responseHead)), promise: nil)
                    Self.drip(answer.body, from: 0, every: drip, on: context.channel)
                    return
                }
                context.write(Self.wrapOutboundOut(.head(responseHead)), promise: nil)
                let bytes = answer.body
                var offset = 0
                while offset < bytes.count {
                    let end = min(offset + 4096, bytes.count)
                    let chunk = ByteBuffer(bytes: bytes[offset..<end])
                    context.write(Self.wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil)
                    offset = end
                }
                let channel = context.channel
                context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }

        /// Byte `index` of `bytes` after `pause`, then the next, then the end of the response.
        static func drip(_ bytes: [UInt8], from index: Int, every pause: Duration, on channel: any Channel) {
            channel.eventLoop.scheduleTask(in: TimeAmount(pause)) {
                guard channel.isActive else { return }
                guard index < bytes.count else {
                    channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in
                        channel.close(promise: nil)
                    }
                    return
                }
                channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: [bytes[index]]))))
                    .whenSuccess { drip(bytes, from: index + 1, every: pause, on: channel) }
            }
        }
    }
}

@available(*, unavailable) extension WellKnownServer.Responder: Sendable {}
