import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import TestSupport

/// Why a test client gave up.
struct ClientError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Bytes received by a ``RawClient``, and whether the server closed the connection. A reader that finds nothing it
/// can use waits for the next change instead of polling.
final class ByteInbox: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var closed = false
        /// Completed at the next change.
        var waiter: EventLoopPromise<Void>?
    }
    private let state = Mutex(State())

    /// What a reader found.
    enum Taken<T> {
        case value(T)
        case closed
        /// Nothing yet: this future completes at the next change.
        case wait(EventLoopPromise<Void>)
    }

    func append(_ bytes: ByteBuffer) {
        let waiter = state.withLock { state in
            state.bytes += bytes.readableBytesView
            return state.waiter.take()
        }
        waiter?.succeed()
    }

    func close() {
        let waiter = state.withLock { state in
            state.closed = true
            return state.waiter.take()
        }
        waiter?.succeed()
    }

    /// Takes what `parse` accepts from the front of the bytes; otherwise reports the connection's end, or a promise
    /// of the next change (made on `eventLoop`).
    func take<T>(_ parse: (inout ArraySlice<UInt8>) -> T?, waitingOn eventLoop: any EventLoop) -> Taken<T> {
        state.withLock { state in
            var slice = state.bytes[...]
            if let value = parse(&slice) {
                state.bytes = Array(slice)
                return .value(value)
            }
            if state.closed { return .closed }
            let waiter = eventLoop.makePromise(of: Void.self)
            state.waiter = waiter
            return .wait(waiter)
        }
    }
}

private final class InboxHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let inbox: ByteInbox
    init(inbox: ByteInbox) { self.inbox = inbox }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { inbox.append(Self.unwrapInboundIn(data)) }
    func channelInactive(context: ChannelHandlerContext) { inbox.close() }
    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// A TCP (or TLS) client that writes whatever bytes a test gives it, so that it can be as hostile as needed,
/// and parses HTTP responses and server frames by hand.
struct RawClient {
    let channel: any Channel
    let inbox: ByteInbox

    static let timeout = Duration.seconds(5)

    static func connect(
        port: Int, host: String = "127.0.0.1", tls: NIOSSLContext? = nil, from sourceHost: String? = nil
    ) async throws -> RawClient {
        let inbox = ByteInbox()
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: nil))
                    }
                    try channel.pipeline.syncOperations.addHandler(InboxHandler(inbox: inbox))
                }
            }
        if let sourceHost { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: sourceHost, port: 0)) }
        let channel = try await bootstrap.connect(host: host, port: port).get()
        return RawClient(channel: channel, inbox: inbox)
    }

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
    }

    func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    /// Stops reading from the socket: what the server sends stays in the kernel's buffers, which fill up.
    func stopReading() async throws { try await channel.setOption(ChannelOptions.autoRead, value: false).get() }

    func close() async { try? await channel.close() }

    /// Shuts the sending half of the TCP connection (FIN) and keeps reading.
    func halfClose() async throws { try await channel.close(mode: .output) }

    /// Waits for `parse` to accept the received bytes; `nil` when the connection closed first.
    func wait<T>(for what: String, timeout: Duration = timeout, _ parse: (inout ArraySlice<UInt8>) -> T?)
        async throws -> T?
    {
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        while true {
            switch inbox.take(parse, waitingOn: channel.eventLoop) {
            case .value(let value):
                return value
            case .closed:
                return nil
            case .wait(let change):
                let timer = channel.eventLoop.scheduleTask(deadline: deadline) {
                    change.fail(ClientError("timed out waiting for \(what)"))
                }
                defer { timer.cancel() }
                try await change.futureResult.get()
            }
        }
    }

    /// The next HTTP response; with `Content-Length`, its body too.
    func readResponse() async throws -> RawResponse {
        let response = try await wait(for: "an HTTP response") { RawResponse.parse(&$0) }
        guard let response else { throw ClientError("connection closed before an HTTP response") }
        return response
    }

    /// The next frame from the server; `nil` if the connection closed first.
    func readFrame(timeout: Duration = timeout) async throws -> RawFrame? {
        try await wait(for: "a frame", timeout: timeout) { RawFrame.parse(&$0) }
    }

    /// Reads frames until a close frame, then expects the server to end the TCP connection; returns the code.
    func expectClose(timeout: Duration = timeout) async throws -> UInt16? {
        while let frame = try await readFrame(timeout: timeout) {
            if frame.opcode == 0x8 {
                // Answer it, as a client does (RFC 6455 §5.5.1): the relay then closes the TCP connection.
                try? await send(RawFrame.client(opcode: 0x8, frame.payload))
                try await expectEOF(timeout: timeout)
                return frame.closeCode
            }
        }
        throw ClientError("connection ended without a close frame")
    }

    /// Waits for the server to close the TCP connection, discarding whatever arrives.
    func expectEOF(timeout: Duration = timeout) async throws {
        let result: Int? = try await wait(for: "the end of the connection", timeout: timeout) { bytes in
            bytes = bytes.dropFirst(bytes.count)
            return nil
        }
        if result != nil { throw ClientError("unreachable") }
    }
}
