import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import HybridIO

/// The handler that reads the status of a refused upgrade, in an `EmbeddedChannel`.
struct StatusCatcherTests {
    let channel = EmbeddedChannel()
    let status: EventLoopFuture<Int>

    init() throws {
        let promise = channel.eventLoop.makePromise(of: Int.self)
        status = promise.futureResult
        try channel.pipeline.syncOperations.addHandler(StatusCatcher(promise: promise))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
    }

    @Test(arguments: [404, 409, 410, 429, 503])
    func aRefusalsStatusIsCaughtAndTheConnectionClosed(code: Int) throws {
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: code))
        try channel.writeInbound(HTTPClientResponsePart.head(head))
        #expect(try status.wait() == code)
        #expect(!channel.isActive)
        // The body that may follow, and the close itself, change nothing.
        _ = try? channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(try status.wait() == code)
    }

    @Test func aConnectionThatClosesBeforeAnyStatusGivesZero() throws {
        try channel.close().wait()
        #expect(try status.wait() == 0)
    }

    @Test func anErrorGivesZeroAndCloses() throws {
        struct Reset: Error {}
        channel.pipeline.fireErrorCaught(Reset())
        #expect(try status.wait() == 0)
        #expect(!channel.isActive)
    }
}
